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
// ReadLock and WriteLock are the two sides, each a lock.Locker. Each
// acquire creates an ephemeral sequential node "<host>-R-<seq10>" or
// "<host>-W-<seq10>" (host: WithHost). A reader holds the lock when no W
// node sorts before its own, a writer when its node is first; each waiter
// watches one node, so a release wakes only the waiters that may proceed
// (docs/design.md, "The sequential-node queue").
//
// # Downgrade, not upgrade
//
// The holder of the write lock may take the read lock at once, and keeps
// it after releasing the write lock; until then the read grant stands on
// the write node (docs/design.md, "Downgrading a write lock"). Asking for
// the write lock while holding only the read lock fails with ErrUpgrade:
// two readers doing it would wait for each other forever.
//
// # What it guarantees
//
//   - While a writer holds the lock, no other contender of any process on
//     the path does, as long as each holder's session lives; FIFO order.
//   - Reentrancy per goroutine for both sides, counted locally; Release by
//     another goroutine, or more often than acquired, is an error.
//   - The contract of package lock (see docs/safety.md); Lease.Lost, Fence
//     (for readers too) and GuardedWrite.
//   - Nodes are sealed, as in package mutex; with lock.WithRevocable,
//     lock.Revoke may ask a holder to release (Lease.Revoked).
//
// # What it does not guarantee
//
// Holding the lock is a lease on the ZooKeeper session, not a promise:
// only fencing closes the window in which an expired holder still believes
// it holds. Reentrancy is per handle: a reader of one handle asking for
// the write lock through another deadlocks. Curator's
// InterProcessReadWriteLock names its nodes differently: not recognised.
//
// # Errors
//
// Package lock's errors, wrapped ("rwlock: release <path>: lock: not
// held"); ErrUpgrade; conn.ErrInvalidArgument for bad input to New;
// conn.ErrLeaseLost for a re-entry or downgrade on a lost lease.
package rwlock
