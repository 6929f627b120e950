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
//     (session namespace and Path), then of their ensemble, so MultiLocks
//     over overlapping sets cannot deadlock each other.
//   - One deadline: Acquire's ctx bounds the whole acquisition, rollback
//     included (it returns at most 100 ms after ctx ends).
//   - All or nothing: if a lock cannot be taken, those taken are released
//     in reverse order before Acquire returns.
//   - Release releases every lock in reverse order, past failures; a lock
//     it leaves held keeps the MultiLock held (ErrPartlyReleased) until a
//     later Release succeeds.
//
// # What it does not guarantee
//
// The locks are not taken atomically: others can see some held and some
// not. Fixed order prevents deadlock only among code that takes locks in
// path order. A MultiLock is not reentrant (ErrBusy). Goroutine-owned
// locks (mutex, rwlock) must be released from the goroutine that acquired.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrBusy, ErrPartlyReleased,
// lock.ErrNotHeld, conn.ErrInvalidArgument (from New). The errors of the
// locks underneath are wrapped with their path and joined.
package multilock
