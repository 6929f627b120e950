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
//     (session namespace and Path), then of their ensemble, whatever the
//     order given to New, so MultiLocks over overlapping sets cannot
//     deadlock each other. Two locks with the same full path on the same
//     ensemble (as named by the addresses given to conn.Connect) are
//     refused by New.
//   - One deadline: Acquire's ctx bounds the whole acquisition, rollback
//     included (it returns at most 100 ms after ctx ends).
//   - All or nothing: if a lock cannot be taken, those taken are released
//     in reverse order before Acquire returns (what cannot finish goes on
//     in the background).
//   - Release releases every lock in reverse order, past failures, and
//     joins the errors. A lock whose Release leaves it held (any error but
//     lock.ErrReleasePending or lock.ErrNotHeld) keeps the MultiLock held
//     by the locks left: Release fails with ErrPartlyReleased, Acquire with
//     ErrBusy, until a later Release, which retries just those, succeeds.
//   - Lost closes when any lease is lost or on the first Release.
//
// # What it does not guarantee
//
// Holding is a lease on each lock's session, not a promise; watch Lost.
// The locks are not taken atomically: others can see some held and some
// not. Fixed order prevents deadlock only among code that takes locks in
// path order. A MultiLock is not reentrant (ErrBusy). Any goroutine may
// call Release, but goroutine-owned locks (mutex, rwlock) refuse another
// goroutine and stay held: release from the goroutine that acquired.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrBusy, ErrPartlyReleased,
// lock.ErrNotHeld, conn.ErrInvalidArgument (from New: no lock, a nil lock,
// two locks on the same path). The errors of the locks underneath are
// wrapped with their path and joined, so errors.Is finds them too.
package multilock
