// Package semaphoremutex is a counting semaphore over ZooKeeper
// (Semaphore: at most N holders) and the lock built on it (Mutex: the
// semaphore with one lease), the counterparts of Apache Curator's
// InterProcessSemaphoreV2 and InterProcessSemaphoreMutex, with which they
// share a path (same layout, same node names).
//
//	m, err := semaphoremutex.New(sess, "/locks/reports")
//	lease, err := m.Acquire(ctx) // blocks; ctx's deadline is the timeout
//	if err != nil { ... }
//	go func() {
//		defer m.Release(context.WithoutCancel(ctx)) // any goroutine may release
//		...
//	}()
//
//	sem, err := semaphoremutex.NewSemaphore(sess, "/pools/db", 3)
//	lease, err := sem.Acquire(ctx) // one of 3 leases
//	defer sem.ReturnLease(context.WithoutCancel(ctx), lease)
//
// Under the path, locks/ holds an internal FIFO mutex and leases/ one node
// per lease held: a contender takes the internal mutex, waits until fewer
// than N lease nodes exist, and creates its lease node in the transaction
// that releases the internal mutex (docs/design.md).
//
// # What it guarantees
//
//   - At most N holders among all processes on the path, Curator's
//     included, while each holder's session lives and all agree on N
//     (nothing checks that, as in Curator).
//   - FIFO order, and no herd: a release wakes at most one waiter.
//   - The contract of package lock (see docs/safety.md). With one lease
//     the fencing tokens grow strictly in grant order, Curator's included.
//   - Nodes are sealed unless lock.WithRevocable. lock.WithLocalHandoff
//     (Mutex only, off by default): the handles of one session and path
//     pass the lease between them without a request, up to a bound.
//
// # What it does not guarantee
//
// Holding a lease is a lease on the ZooKeeper session, not a promise: only
// fencing closes the window in which an expired holder still believes it
// holds. TryAcquire gives up, as Curator's does, whenever another
// contender holds the internal mutex. A client that creates lease nodes
// without holding the internal mutex, or a third party deleting an
// internal lock node, breaks the count. Curator's getParticipantNodes does
// not see our one-lease holder (Participants does).
//
// # Errors
//
// Package lock's, conn's and ctx's errors, wrapped with the call and path
// ("semaphoremutex: release <path>: lock: not held").
package semaphoremutex
