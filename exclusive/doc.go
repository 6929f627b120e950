// Package exclusive is the naive ZooKeeper lock, kept to measure the herd
// effect against the sequential-node recipes (packages mutex,
// semaphoremutex and rwlock), which you should use instead.
//
// Every contender tries to create the one ephemeral node <path>/lock; the
// one that succeeds holds the lock. Every other one watches the node and,
// when it is deleted, all of them try again at once.
//
// # What it guarantees
//
//   - Never two holders: only one create of a path succeeds, and the node
//     goes with its session. The node is sealed: a third party's set-data
//     fails with zk.ErrNoAuth.
//   - The contract of package lock: the deadline is kept, and nothing of
//     ours is left behind (see docs/safety.md). A node whose create answer
//     was lost is known as ours by our session and the unique id in its
//     data.
//   - The lease knows its node's czxid, so a node created at the path after
//     ours was deleted is not taken for ours: Fence stays ours, Lost closes,
//     and Release leaves that node alone.
//
// # What it does not guarantee
//
// Fairness: whichever create reaches the leader first wins; a contender
// can starve.
//
// Efficiency: each release wakes all N waiters, and all of them send a
// create (a quorum write even when it fails), so draining N waiters costs
// O(N²). docs/herd-effect.md has the measurements.
//
// Every holder's node has the same path: if a third party deletes ours and
// someone creates it again, our GuardedWrite's check passes on the new
// node until the lease notices the deletion. Fence (our node's czxid) has
// no such gap. Likewise, if between Release's read and its delete a third
// party deletes our node and it is created again unsealed (by another
// handle of our session, or with another ACL), Release deletes that node.
//
// A handle is owned like sync.Mutex: not reentrant (a second Acquire waits
// for the Release), and any goroutine may release it.
//
// # Errors
//
// Package lock's errors, wrapped ("exclusive: release <path>: lock: not
// held"): lock.ErrNotHeld, lock.ErrReleasePending, lock.ErrCreatePending;
// conn.ErrInvalidArgument for bad input to New. Errors of ctx and of the
// session are wrapped; losing a session while waiting is not an error.
package exclusive
