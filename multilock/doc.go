// Package multilock takes several locks as one, all or nothing, in the
// spirit of Curator's InterProcessMultiLock, minus its deadlock: the locks
// are always taken in the order of their paths.
//
//	m, err := multilock.New(accountA, accountB) // any Lockers, any order
//	leases, err := m.Acquire(ctx)               // one deadline for all
//	defer m.Release(ctx)
//	select { case <-m.Lost(): ... }              // any of them lost
//
// # What it guarantees
//
//   - Fixed order: locks are taken in ascending Path order, whatever the
//     order given to New. Two MultiLocks over overlapping sets (A,B and B,A)
//     take the shared locks in the same order, so neither can hold one while
//     waiting for one the other holds.
//   - One deadline: Acquire's ctx bounds the whole acquisition, not each
//     lock.
//   - All or nothing: if any lock cannot be taken, those already taken are
//     released, in reverse order, on a fresh context (RollbackTimeout), not
//     on the caller's possibly cancelled one, before Acquire returns.
//   - Release releases every lock in reverse order and goes on past a
//     failure; all failures are reported together (errors.Join).
//   - Lost closes when any lease is lost or on Release; the one goroutine
//     behind it ends then.
//
// # What it does not guarantee
//
// Holding is a lease on each lock's ZooKeeper session, not a promise: a
// session can end at any time and take its lock with it; watch Lost. The
// locks are not taken atomically: while Acquire runs, some are held and
// others not, and other processes can see that. Fixed ordering prevents
// deadlock only among MultiLocks (and code that takes locks in path order);
// code that takes the same locks one by one in another order can still
// deadlock with a MultiLock.
//
// A MultiLock is not reentrant: Acquire while held fails with ErrBusy.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrNoLocks, ErrNilLock,
// ErrDuplicatePath (from New), ErrBusy, ErrNotHeld. Errors of the locks
// underneath are wrapped with their path and joined, so errors.Is finds
// them too (context.DeadlineExceeded, conn.ErrLeaseLost, ...).
package multilock
