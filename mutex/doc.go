// Package mutex is a distributed lock over ZooKeeper: InterProcessMutex,
// the counterpart of Apache Curator's InterProcessMutex, with which it
// shares a lock path (same node names, same queue).
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
// # How it works
//
// Each acquire creates an ephemeral sequential node
// "_c_<uuid>-lock-<seq>" under the lock path (its data: host, pid, uuid).
// The node with the lowest sequence number holds the lock; every other
// contender watches only its immediate predecessor, so a release wakes one
// waiter (no herd), and a waiter lists the children only once: a handoff
// is the holder's delete and one notification.
//
// # What it guarantees
//
//   - Mutual exclusion among all processes using the lock path (Curator's
//     InterProcessMutex, and the lock nodes of kazoo and go-zookeeper,
//     count as contenders), as long as each holder's session lives.
//   - Fairness: contenders are granted in the order their nodes were
//     created (FIFO).
//   - Reentrancy per goroutine, counted locally: the holding goroutine's
//     further Acquire calls return the same *conn.Lease at once, and it must
//     call Release as many times. Another goroutine of the same process is
//     a separate contender and waits. Release from any goroutine but the
//     holder is an error, never a panic. (package semaphoremutex offers the
//     opposite: not reentrant, releasable from any goroutine.)
//   - A deadline is kept: Acquire and TryAcquire return at the latest
//     100 ms after ctx ends (plus scheduling; the tests allow 250 ms), even
//     when the connection is blackholed before or during the create.
//   - Nothing is left behind: a failed, timed-out or cancelled acquire
//     deletes its node, including a node whose create answer was lost with
//     the connection. What cannot be done within those 100 ms goes on in
//     the background, on a goroutine that ends with the session: a create
//     still in flight is resolved (its answer, or, when the answer is lost,
//     our node looked for by its unique id once the connection is back)
//     and its node deleted; an acquire that fails because that search
//     failed too (a bounded conn.WithRetry, the connection lost again)
//     leaves it to the background as well (lock.ErrCreatePending), and its
//     node is never left in the queue for the life of the session; a
//     delete is retried until the node is gone. If the session expires
//     first, the node goes with it. A release whose outcome is unknown
//     keeps deleting in the background the same way.
//   - The holder can always learn that the lock is no longer safe:
//     Lease.Lost closes when the session's epoch ends (expiry, or the local
//     timer while cut off), when the node is deleted by someone else (seen
//     through the node's watch, which the first call of Lost or Revoked
//     sets: see conn.Lease.Lost), or on Release.
//   - No write into the holder's node lets anyone else in. Lock nodes are
//     sealed: their ACL is the session's (conn.WithACL) without WRITE and
//     ADMIN, plus the session's own random identity with ALL, so a third
//     party's set-data (a raw client, Curator's Revoker) fails with
//     zk.ErrNoAuth, and a waiter trusts a data change as its predecessor's
//     release only on a node that was sealed when it read it: the node's
//     data said so, and its ACL, never changed since its creation, let one
//     digest identity alone change it (the waiter reads the ACL together
//     with the data: one more request per wait, no more waiting). A
//     foreign client's node (Curator, kazoo, go-zookeeper, or any node
//     others may write, whatever its data says) whose data changes is read
//     again, never taken as released. The waiter cannot tell from what it
//     reads a client that impersonates a session of ours on purpose (its
//     own digest identity alone may change its node, whose data copies
//     ours): keep such clients off the lock path with its ACL. Deleting a
//     holder's node is up to the parent's ACL: it lets the next waiter in,
//     and the holder's Lost closes.
//   - Cooperative revocation, as Curator's: with lock.WithRevocable the
//     nodes keep the session's ACL as it is, Curator's Revoker or lock.Revoke
//     can ask the holder to release (Lease.Revoked closes on
//     "__REVOKE__"), and the holder keeps the mutex until it releases it.
//     lock.Revoke also reaches a Curator holder that called
//     makeRevocable. lock.Revoke on a sealed node fails with an error
//     matching lock.ErrNotRevocable.
//   - A fencing token per grant (Lease.Fence: the node's czxid and the
//     grant's pass on it, growing with every grant, handed on in the
//     process or not) and guarded writes (Lease.GuardedWrite: a
//     transaction that commits only while our node exists).
//   - In-process handoff, when asked for (lock.WithLocalHandoff; off by
//     default): the goroutines of one session share one node and pass the
//     lock between them without a request, up to a bound, after which the
//     node goes back to the queue; a contender of another process waits
//     for at most maxPasses+1 holds of this process (or budget plus one
//     hold). Every grant is a lease of its own: released, it refuses
//     guarded writes (GuardedWrite); Lost closes with the node's;
//     Lease.Fence (the node's czxid and the grant's pass) grows strictly
//     with every grant. The node is not handed on once known deleted, in an
//     ended epoch, or while the connection is suspended (see
//     lock.WithLocalHandoff).
//
// # What it does not guarantee
//
// Holding the mutex is a lease on the ZooKeeper session, not a promise.
// Between the moment the server expires a session and the moment its client
// learns it, that client may still believe it holds the lock while another
// already does; the local timer narrows the window, Lost reports its end,
// and only fencing (Fence, GuardedWrite) closes it for writes. Waiting is
// not bounded unless ctx is. A lock node deleted by a third party while its
// owner is queued is noticed only once granted, through the lease.
// Reentrancy is per goroutine and per handle: a goroutine's acquires
// through two handles on one path are two contenders (and deadlock). A
// goroutine that ends while holding the mutex leaves it held: no other
// goroutine may release it, so it stays held until the session is closed
// or lost.
//
// # Errors
//
// Acquire, TryAcquire and Release follow the one contract of every lock of
// this module, a table in package lock (github.com/zkrecipes/zkrecipes/lock).
// Its errors for those are package lock's (lock.ErrNotHeld,
// lock.ErrReleasePending, lock.ErrNotOwner), read the same in every recipe:
// "mutex: release <path>: lock: not held".
//
// lock.Revoke refuses a sealed node with an error matching
// lock.ErrNotRevocable.
// Sentinels, compared with errors.Is: lock.ErrNotOwner, lock.ErrNotHeld (Release by a
// goroutine that does not hold the mutex), lock.ErrReleasePending (deletion of
// the node not confirmed; continuing in the background),
// conn.ErrInvalidArgument (bad input to New: a nil session, a bad path or
// option). Errors of the caller's context (context.DeadlineExceeded,
// context.Canceled) and of the session (conn.ErrClosed after Close,
// conn.ErrLeaseLost for a re-entry on a lost lease) are wrapped.
package mutex
