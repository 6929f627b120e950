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
// the lowest holds the lock and every other watches only its predecessor,
// so a handoff is the holder's release and one notification. See
// docs/design.md, "The sequential-node queue".
//
// # What it guarantees
//
//   - Mutual exclusion among all processes on the path (Curator's, kazoo's
//     and go-zookeeper's lock nodes count as contenders), while each
//     holder's session lives; FIFO order; no herd.
//   - Reentrancy per goroutine, counted locally: the holder's further
//     Acquire calls return the same lease, and it must Release as often.
//     Release by another goroutine is an error (lock.ErrNotOwner), never a
//     panic. (semaphoremutex.Mutex is the opposite: owned by the handle.)
//   - The contract of package lock: the deadline is kept, and nothing of
//     ours is left behind (see docs/safety.md).
//   - Lease.Lost closes when the lock is no longer safe; Lease.Fence (growing
//     with every grant) and Lease.GuardedWrite fence writes.
//   - Nodes are sealed: only the holder's own release lets the next waiter
//     in, not a third party's write (docs/design.md, "The handover mark").
//     With lock.WithRevocable, Curator's Revoker or lock.Revoke may ask the
//     holder to release (Lease.Revoked); it keeps the lock until it does.
//   - lock.WithLocalHandoff (off by default): the goroutines of one session pass
//     the lock between them without a request, up to a bound.
//
// # What it does not guarantee
//
// Holding the mutex is a lease on the ZooKeeper session, not a promise:
// only fencing closes the window in which an expired holder still believes
// it holds. A node deleted by a third party while its owner waits is
// noticed only once granted, through the lease. Reentrancy is per handle:
// one goroutine's acquires through two handles on one path are two
// contenders (and deadlock). A goroutine that ends while holding leaves the
// mutex held until the session ends. A client that may create children of
// the lock path can break the lock: keep untrusted ones out with its ACL
// (conn.WithACL).
//
// # Errors
//
// Package lock's errors, wrapped ("mutex: release <path>: lock: not held"):
// lock.ErrNotOwner and lock.ErrNotHeld (Release by a goroutine that does
// not hold the mutex), lock.ErrReleasePending; conn.ErrInvalidArgument for
// bad input to New; conn.ErrLeaseLost for a re-entry on a lost lease.
// Errors of ctx and of the session are wrapped.
package mutex
