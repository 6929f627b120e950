// Package multilock takes several locks as one, all or nothing, in the
// spirit of Curator's InterProcessMultiLock, minus its deadlock: the locks
// are always taken in the order of their full paths.
//
//	m, err := multilock.New(accountA, accountB) // any locks, any order
//	leases, err := m.Acquire(ctx)               // one deadline for all
//	defer m.Release(ctx)
//	select { case <-m.Lost(): ... }              // any of them lost
//
// Locks are taken in ascending order of their full path (session namespace
// and Path), then of their ensemble, so MultiLocks over overlapping sets
// cannot deadlock each other; code that takes locks otherwise can. One
// ctx bounds the whole acquisition, rollback included. If a lock cannot be
// taken, those taken are released in reverse order before Acquire returns.
// The locks are not taken atomically: others can see some held and some
// not. Goroutine-owned locks (mutex, rwlock) must be released from the
// goroutine that acquired.
//
// Errors: ErrBusy, ErrPartlyReleased, lock.ErrNotHeld,
// conn.ErrInvalidArgument (from New), and the locks' errors, joined.
package multilock
