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
// the lowest holds the lock and every other watches only its predecessor
// (docs/design.md, "The sequential-node queue").
//
// # What it guarantees
//
//   - Mutual exclusion among all processes on the path (Curator's, kazoo's
//     and go-zookeeper's nodes count as contenders) while each holder's
//     session lives; FIFO order; no herd.
//   - Reentrancy per goroutine, counted locally: release as often as
//     acquired. Release by another goroutine is lock.ErrNotOwner.
//   - The contract of package lock (see docs/safety.md); Lease.Lost, Fence
//     and GuardedWrite.
//   - Nodes are sealed: only the holder's own release lets the next waiter
//     in. With lock.WithRevocable, lock.Revoke may ask the holder to
//     release (Lease.Revoked).
//   - lock.WithLocalHandoff: the goroutines of one session pass the lock
//     between them without a request, up to a bound.
//
// # What it does not guarantee
//
// Holding the mutex is a lease on the ZooKeeper session, not a promise:
// only fencing closes the window in which an expired holder still believes
// it holds. Reentrancy is per handle: two handles on one path are two
// contenders (and deadlock). A goroutine that ends while holding leaves the
// mutex held until the session ends. Keep clients that may create children
// of the lock path out with its ACL (conn.WithACL).
//
// # Errors
//
// Package lock's errors, wrapped ("mutex: release <path>: lock: not
// held"); conn.ErrInvalidArgument for bad input to New; conn.ErrLeaseLost
// for a re-entry on a lost lease.
package mutex
