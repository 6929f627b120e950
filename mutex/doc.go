// Package mutex is a fair distributed lock over ZooKeeper:
// InterProcessMutex, the counterpart of Apache Curator's InterProcessMutex,
// with which it shares a lock path (same node names, same queue).
//
//	m, err := mutex.New(sess, "/locks/orders")
//	lease, err := m.Acquire(ctx) // blocks; ctx's deadline is the timeout
//	if err != nil { ... }
//	defer m.Release(context.WithoutCancel(ctx))
//	_, err = lease.GuardedWrite(ctx, &zk.SetDataRequest{...}) // only while held
//
// Each acquire creates an ephemeral sequential node "_c_<uuid>-lock-<seq>";
// the lowest holds the lock and every other watches only its predecessor:
// FIFO, no herd (docs/design.md, "The sequential-node queue"). Curator's,
// kazoo's and go-zookeeper's nodes count as contenders. The mutex keeps
// package lock's contract (docs/safety.md). It is reentrant per goroutine
// and per handle: release as often as acquired, from the goroutine that
// acquired. Nodes are sealed: only the holder's own release lets the next
// waiter in; with lock.WithRevocable, lock.Revoke may ask the holder to
// release. With lock.WithLocalHandoff the goroutines of one session pass
// the lock between them without a request, up to a bound.
//
// Holding the mutex is a lease on the ZooKeeper session, not a promise:
// watch Lease.Lost; only fencing (Lease.Fence, GuardedWrite) closes the
// window in which an expired holder still believes it holds.
//
// Errors are package lock's, wrapped ("mutex: release <path>: lock: not
// held"); conn.ErrInvalidArgument for bad input to New.
package mutex
