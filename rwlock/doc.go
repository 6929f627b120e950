// Package rwlock is a distributed read/write lock over ZooKeeper: readers
// share it, a writer holds it alone, and contenders are served in the
// order they queued, so writers are not starved.
//
//	rw, err := rwlock.New(sess, "/locks/catalog")
//	lease, err := rw.ReadLock().Acquire(ctx) // or rw.WriteLock()
//	if err != nil { ... }
//	defer rw.ReadLock().Release(context.WithoutCancel(ctx))
//	<-lease.Lost() // the session ended: stop working
//
// ReadLock and WriteLock are the two sides, each a lock.Locker. Each
// acquire creates an ephemeral sequential node "<host>-R-<seq10>" or
// "<host>-W-<seq10>" (host: WithHost). A reader holds the lock when no W
// node sorts before its own, a writer when its node is first; each waiter
// watches one node (docs/design.md, "The sequential-node queue"). Both
// sides keep package lock's contract (docs/safety.md) and are reentrant
// per goroutine and per handle, as in package mutex, and sealed unless
// lock.WithRevocable. Curator's InterProcessReadWriteLock names its nodes
// differently: not recognised.
//
// The holder of the write lock may take the read lock at once, and keeps
// it after releasing the write lock (docs/design.md, "Downgrading a write
// lock"). Asking for the write lock while holding only the read lock fails
// with ErrUpgrade: two readers doing it would wait for each other forever.
//
// Errors are package lock's, wrapped ("rwlock: release <path>: lock: not
// held"); ErrUpgrade; conn.ErrInvalidArgument for bad input to New.
package rwlock
