// Package mutex is a fair distributed lock over ZooKeeper:
// InterProcessMutex, the counterpart of Apache Curator's InterProcessMutex,
// with which it shares a lock path (same node names, same queue).
//
//	m, err := mutex.New(sess, "/locks/orders")
//	lease, err := m.Acquire(ctx) // blocks; ctx's deadline is the timeout
//	if err != nil { ... }
//	defer m.Release(context.WithoutCancel(ctx))
//	select {
//	case <-lease.Lost(): // the session ended: stop working
//	default:
//	}
//	_, err = lease.GuardedWrite(ctx, &zk.SetDataRequest{...}) // only while held
//
// Each acquire creates an ephemeral sequential node "_c_<uuid>-lock-<seq>";
// the lowest holds the lock and every other watches only its predecessor:
// FIFO, no herd (docs/design.md, "The sequential-node queue"). Curator's,
// kazoo's and go-zookeeper's nodes count as contenders. The mutex keeps
// package lock's contract; docs/safety.md says what holds under which
// fault. It is reentrant per goroutine and per handle, counted locally:
// release as often as acquired, from the goroutine that acquired
// (lock.ErrNotOwner otherwise). Nodes are sealed: only the holder's own
// release lets the next waiter in; with lock.WithRevocable, lock.Revoke may
// ask the holder to release (Lease.Revoked). With lock.WithLocalHandoff
// the goroutines of one session pass the lock between them without a
// request, up to a bound.
//
// Holding the mutex is a lease on the ZooKeeper session, not a promise:
// only fencing (Lease.Fence, GuardedWrite) closes the window in which an
// expired holder still believes it holds. A goroutine that ends while
// holding leaves the mutex held until the session ends.
//
// Errors are package lock's, wrapped ("mutex: release <path>: lock: not
// held"); conn.ErrInvalidArgument for bad input to New.
package mutex
