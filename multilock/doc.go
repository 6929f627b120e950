// Package multilock takes several locks as one, all or nothing, in the
// spirit of Curator's InterProcessMultiLock, minus its deadlock: the locks
// are always taken in the order of their full paths.
//
//	m, err := multilock.New(accountA, accountB) // any locks, any order
//	leases, err := m.Acquire(ctx)               // one deadline for all
//	defer m.Release(ctx)
//	select { case <-m.Lost(): ... }              // any of them lost
//
// # What it guarantees
//
//   - Fixed order: locks are taken in ascending order of their full path
//     (the namespace of the session the lock was made with, followed by
//     its Path), then of their ensemble (the addresses given to
//     conn.Connect, sorted), whatever the order given to New and whatever
//     namespaces the sessions have. Two MultiLocks over overlapping sets
//     (A,B and B,A) take the shared locks in the same order, so neither can
//     hold one while waiting for one the other holds.
//   - One lock is one lock: two locks with the same full path on the
//     same ensemble (through sessions with different namespaces, say) are
//     refused by New (conn.ErrInvalidArgument), rather than a MultiLock
//     that waits on itself. The ensemble is named by the addresses given
//     to conn.Connect: one reached through other addresses is not
//     recognised.
//   - One deadline: Acquire's ctx bounds the whole acquisition, not each
//     lock, rollback included: Acquire returns at the latest 100 ms after
//     ctx ended, even with the connection down.
//   - All or nothing: if any lock cannot be taken, those already taken are
//     released, in reverse order, on a context of their own that ends
//     100 ms after the caller's ended (10 s at most), before
//     Acquire returns; a release that cannot finish by then (the
//     connection is down) goes on in the background until the node is gone
//     or its session ends.
//   - Release releases every lock in reverse order and goes on past a
//     failure; all failures are reported together (errors.Join).
//   - Nothing is forgotten: a lock whose Release fails in a way that leaves
//     it held (anything but nil, a "release pending" error, which matches
//     lock.ErrReleasePending, or a "not held" one, which matches
//     lock.ErrNotHeld) keeps the MultiLock held, by the locks left only.
//     Release then fails with ErrPartlyReleased, Acquire with ErrBusy,
//     until a later Release, which retries just those locks, succeeds.
//   - Lost closes when any lease is lost or on the first Release, even one
//     that leaves locks held; the one goroutine behind it ends then.
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
// Any goroutine may call Release, but the locks that must be released by
// the goroutine that took them (mutex, rwlock) refuse another one and stay
// held: release a MultiLock over them from the goroutine that acquired it.
//
// # Errors
//
// New takes lock.Lockers, and "not held" is lock.ErrNotHeld (package lock
// holds what every lock of this module shares, and the one table of their
// Acquire/Release contract).
//
// Sentinels, compared with errors.Is: conn.ErrInvalidArgument (from New:
// no lock, a nil lock, two locks on the same path), ErrBusy,
// lock.ErrNotHeld, ErrPartlyReleased (Release left some locks held: call
// it again). Errors of the locks
// underneath are wrapped with their path and joined, so errors.Is finds
// them too (context.DeadlineExceeded, conn.ErrLeaseLost,
// lock.ErrReleasePending, lock.ErrNotHeld, ...).
package multilock
