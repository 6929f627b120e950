// Package exclusive is the naive ZooKeeper lock, kept to measure the herd
// effect against the sequential-node recipes (packages mutex,
// semaphoremutex and rwlock), which you should use instead.
//
// Every contender tries to create the one ephemeral node <path>/lock; the
// others watch it and, when it is deleted, all try again at once.
//
// # What it guarantees
//
//   - Never two holders: only one create of a path succeeds, and the node
//     goes with its session. The node is sealed: a third party's set-data
//     fails with zk.ErrNoAuth.
//   - The contract of package lock (see docs/safety.md). A node whose
//     create answer was lost is known as ours by our session and the
//     unique id in its data.
//   - The lease knows its node's czxid: a node created at the path after
//     ours was deleted is not taken for ours by Fence, Lost or Release.
//
// # What it does not guarantee
//
// Fairness: whichever create reaches the leader first wins. Efficiency:
// each release wakes all N waiters, and each sends a create (a quorum
// write even when it fails): O(N²) to drain N waiters
// (docs/herd-effect.md). If a third party deletes our node and someone
// creates it again, our GuardedWrite's check passes on the new node until
// the lease notices (Fence has no such gap), and a Release between its
// read and its delete may delete that node if it was created unsealed.
//
// # Errors
//
// Package lock's errors, wrapped ("exclusive: release <path>: lock: not
// held"): lock.ErrNotHeld, lock.ErrReleasePending, lock.ErrCreatePending;
// conn.ErrInvalidArgument for bad input to New. Errors of ctx and of the
// session are wrapped; losing a session while waiting is not an error.
package exclusive
