// Package exclusive is the naive ZooKeeper lock, kept for comparison with
// the sequential-node recipes (packages mutex, semaphoremutex and rwlock),
// which you should use instead.
//
// Every contender tries to create the one ephemeral node <path>/lock. The
// one that succeeds holds the lock. Every other one reads the node with a
// watch and, when the node is deleted, tries again, all at once.
//
// # What it guarantees
//
//   - Never two holders: ZooKeeper lets only one create of a path succeed,
//     and the node is ephemeral, so it goes when its session ends. A
//     change of the node's data wakes the waiters, which only try to
//     create it again; and the node is sealed (its ACL is the session's
//     without WRITE and ADMIN, plus the session's own identity with ALL),
//     so a third party's set-data fails with zk.ErrNoAuth.
//   - Acquire blocks until the lock is held or ctx ends, and returns at the
//     latest 100 ms after ctx ends (plus scheduling; the tests allow
//     250 ms), even when the connection is blackholed before or during the
//     create; on cancel, timeout or error nothing of ours is left on the
//     server once the connection or the session recovers. When a create's
//     answer is lost (the connection dropped, or ctx ended with it in
//     flight), the node is checked against our session id and the unique
//     id in its data, and deleted if it is ours, in the background if need
//     be, on a goroutine that keeps trying until that is done or the
//     session ends (an expired session takes the node with it). An acquire
//     that fails before it could tell whether the node is ours (with a
//     bounded conn.WithRetry, when the connection is lost again) says so:
//     its error matches lock.ErrCreatePending.
//   - A holder learns that its lock is no longer safe from the returned
//     conn.Lease (Lost, Err), and can fence its writes with Lease.Fence and
//     Lease.GuardedWrite. Holding is a lease on the session, not a promise.
//     The lease knows its node's czxid (Acquire reads the node it created):
//     a node created at the lock path after ours was deleted is not ours,
//     so Fence returns our node's czxid, never the next holder's, and Lost
//     closes when its watch finds that node.
//   - Release deletes our node only: it reads the node, and deletes it if
//     it is still ours (our session, our Acquire's id in its data), in one
//     transaction behind a set-data of it, which the server refuses on
//     another session's node (every node of the lock is sealed). A node
//     that is gone, or that someone else created after ours was deleted,
//     is left alone, and Release returns nil. When the delete's fate is
//     unknown it keeps deleting in the background until the node is gone
//     or the session epoch ends, and says so (lock.ErrReleasePending).
//
// # What it does not guarantee
//
// Fairness: the lock goes to whichever contender's create reaches the
// leader first, not to the one that waited longest; a contender can starve.
//
// A guarded write after a third-party delete: Lease.GuardedWrite checks that
// the lock node exists, and every holder's node has the same path. If a
// third party deletes our node (nobody else can change it: it is sealed)
// and another contender creates it, our guarded write's check passes on the
// new holder's node until our lease has noticed the deletion (Lost closes
// as soon as the deletion's notification arrives, if Lost was called; if
// Lost is first called after the node was created again, as soon as its
// first read finds the new node). The sequential recipes do not have this
// gap: their nodes' names are never reused. Fence with Lease.Fence (the
// czxid of the node we created, pass 0), which the new holder's exceeds.
//
// A release racing a third party: Release's read and its delete are two
// requests. If, between them, a third party deletes our node and the node
// is created again without the seal of another session (by another handle
// of our own session, or by a third party with its own ACL), Release
// deletes that node.
//
// Efficiency: this is the herd effect. With N waiters, each release wakes
// all N (N watch notifications), and all N send a create, of which N-1 fail
// with NodeExists. A failed create is still a write: it goes through the
// leader and the quorum like a successful one. Then N-1 read the node again
// to set a new watch. So one release costs O(N) notifications and quorum
// writes, and draining a queue of N waiters costs O(N²). The sequential
// recipes (mutex, semaphoremutex, rwlock) wake only the next waiter: one
// notification and one read per release, flat in N. Measured with 5 and
// 20 waiters, each holding for 20ms: about (N+1)/2 watch events and (N+1)/2
// creates per acquire (3 and 10.5), where the mutex takes one watch event
// and two requests per acquire for both; docs/herd-effect.md has the
// server's packets.
//
// Reentrancy: a handle is owned by whoever holds it, like sync.Mutex, and
// any goroutine may release it. A second Acquire on a handle that holds the
// lock waits for the Release (bounded by its ctx); it does not deadlock the
// handle, since Release needs no lock that Acquire holds.
//
// # Errors
//
// Acquire, TryAcquire and Release follow the one contract of every lock of
// this module, a table in package lock (github.com/zkrecipes/zkrecipes/lock).
// Its errors for those are package lock's (lock.ErrNotHeld,
// lock.ErrReleasePending), read the same in every recipe:
// "exclusive: release <path>: lock: not held".
//
// Sentinels, compared with errors.Is: conn.ErrInvalidArgument (bad input
// to New: a nil session, a bad path), lock.ErrNotHeld,
// lock.ErrReleasePending. Acquire and TryAcquire return an error
// matching ctx.Err() when ctx ends, and conn's errors (conn.ErrClosed, ...)
// or go-zookeeper's (zk.ErrNoAuth, ...) wrapped otherwise. Losing a session
// while waiting is not an error: the wait goes on in the next session.
package exclusive
