// Package rwlock is a distributed read/write lock over ZooKeeper: readers
// share it, a writer holds it alone, and contenders are served in the
// order they queued, so writers are not starved.
//
//	rw, err := rwlock.New(sess, "/locks/catalog")
//	lease, err := rw.ReadLock().Acquire(ctx) // or rw.WriteLock()
//	if err != nil { ... }
//	defer rw.ReadLock().Release(context.WithoutCancel(ctx))
//	select {
//	case <-lease.Lost(): // the session ended: stop working
//	default:
//	}
//
// ReadLock and WriteLock are the two sides, each a lock.Locker, so
// multilock takes them.
//
// Each acquire creates an ephemeral sequential node "<host>-R-<seq10>" or
// "<host>-W-<seq10>" (host: WithHost, by default the host name). A reader
// holds the lock when no W node sorts before its own, and watches the
// nearest W node before it; a writer holds it when its node is first, and
// watches its predecessor. Every waiter watches one node, so a release
// wakes only the waiters that may proceed: draining the queue is linear in
// its length. See docs/design.md, "The sequential-node queue".
//
// # Downgrade, not upgrade
//
// A goroutine that holds the write lock may take the read lock at once; it
// then holds both, and keeps the read lock after releasing the write lock.
// Until then the read grant stands on the write node: its GuardedWrite
// checks that node, it is lost with it, and its Fence sorts after the
// write grant and before any later one. If a writer is queued between our
// two nodes, the write node is kept until the read lock is released (the
// write lease counts as released all the same; a revoke request to that
// node reaches the read lease). See docs/design.md,
// "Downgrading a write lock". Asking for the write lock while holding only
// the read lock is refused at once with ErrUpgrade: two readers doing it
// would wait for each other forever.
//
// # What it guarantees
//
//   - While a writer holds the lock, no other contender of any process on
//     the path does, as long as each holder's session lives; FIFO order.
//   - Reentrancy per goroutine for both sides, counted locally: the
//     holder's further Acquire calls return the same lease, and it must
//     Release as often. Release by another goroutine, or more often than
//     acquired, is an error, never a panic, and changes nothing.
//   - The contract of package lock: the deadline is kept, and nothing of
//     ours is left behind (see docs/safety.md).
//   - Lease.Lost closes when the lock is no longer safe; Lease.Fence (for
//     readers too, growing in grant order) and Lease.GuardedWrite fence
//     writes.
//   - Nodes are sealed: only a writer's own release lets the next waiter
//     in (see package mutex). With lock.WithRevocable, lock.Revoke or Curator's
//     Revoker may ask a holder to release (Lease.Revoked).
//
// # What it does not guarantee
//
// Holding the lock is a lease on the ZooKeeper session, not a promise:
// only fencing closes the window in which an expired holder still believes
// it holds. A node deleted by a third party while its owner waits is
// noticed only once granted. Reentrancy is per handle: a reader of one
// handle asking for the write lock through another deadlocks. Other
// libraries' read/write nodes are not recognised (Curator's
// InterProcessReadWriteLock names its nodes differently).
//
// # Errors
//
// Package lock's errors, wrapped ("rwlock: release <path>: lock: not
// held"): lock.ErrNotOwner and lock.ErrNotHeld (Release by a goroutine that
// does not hold that side), lock.ErrReleasePending; ErrUpgrade;
// conn.ErrInvalidArgument for bad input to New (a nil session, a bad path,
// option or host); conn.ErrLeaseLost for a re-entry or downgrade on a lost
// lease. Errors of ctx and of the session are wrapped.
package rwlock
