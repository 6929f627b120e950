// Package semaphoremutex is a counting semaphore over ZooKeeper
// (Semaphore: at most N holders) and the lock built on it (Mutex: the
// semaphore with one lease, not reentrant, owned by the handle), the
// counterparts of Apache Curator's InterProcessSemaphoreV2 and
// InterProcessSemaphoreMutex, with which they share a path (same layout,
// same node names).
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
// # How it works
//
// Under the semaphore's path, <path>/locks holds an internal mutex (the
// sequential-node queue of package mutex: "_c_<uuid>-lock-<seq>", FIFO,
// each contender watching only its predecessor) and <path>/leases holds one
// ephemeral sequential node "_c_<uuid>-lease-<seq>" per lease held. To
// acquire, a contender takes the internal mutex, then lists the lease
// nodes. If fewer than N exist, one transaction deletes its internal lock
// node and creates its lease node: it holds a lease, and the next contender
// holds the internal mutex. Otherwise it keeps the internal mutex and waits,
// with a data watch on N of the lease nodes, until one is deleted (a
// release, or a holder's session ending), then decides again from what it
// listed, minus what it saw go.
//
// This is Curator's algorithm, one write leaner: Curator creates its lease
// node first, counts the lease nodes after that, and releases the internal
// mutex in a separate delete. Counting before creating is as sound, because
// every client creates its lease node only while holding the internal mutex
// (Curator's clients and ours), so while one holds it the lease nodes can
// only leave, and a count taken under the mutex stays an upper bound. Our
// transaction commits only while our internal lock node exists, i.e. while
// we still hold the mutex. Curator's clients and ours can share a path.
//
// # One lease: the internal mutex is the lease
//
// With one lease (Mutex, or NewSemaphore with 1), nobody can take a lease
// while someone holds it, so a contender that holds the internal mutex and
// finds no lease node may keep the internal mutex as its lease and create
// no lease node; releasing the lease releases the internal mutex. It does
// so only when no lease node was made since its internal lock node was
// (leases/'s pzxid, or the semaphore node's when leases/ does not exist,
// is below that node's czxid): the lease's fencing token is that node's
// czxid, and a lease granted in between (Curator's, whose lease node is
// made when granted) would have a greater one. Otherwise it takes a lease
// node as with several leases, and releases the internal mutex with a
// plain delete, so that the next contender lists the lease nodes.
// Curator's contenders then wait in the internal mutex's queue instead of
// on the lease nodes, which is where they wait anyway while a Curator
// contender checks the leases; the count of holders is still at most one.
// Its internal lock node's data carries a tag saying so, and it marks its
// release as the mutex does (a transaction that sets the node's data and
// deletes it). The waiter behind it, woken by the mark of a node with that
// tag, knows that the holder has just left and that no lease node can
// exist: it holds the mutex without a request. A contender that gives up
// before holding deletes its node plainly, and a Curator contender's node
// carries no tag, so the next one lists the lease nodes as above. A handoff
// then costs what the mutex's costs: the holder's transaction and one
// notification. One difference shows: Curator's getParticipantNodes lists
// lease nodes only, so it does not see our one-lease holder (Participants
// here does).
//
// Costs, in ZooKeeper requests: an uncontended acquire and release is five
// with several leases (create and list the internal lock; list the leases;
// the transaction; the lease node's delete), six with one (create and list
// the internal lock; list the leases; read our internal lock node's czxid,
// which Lease.Fence then has cached, and, when leases/ does not exist, the
// semaphore node's pzxid; the release). Under contention a contender also
// waits on the internal mutex: a getW and a notification. With one lease,
// a contender handed over to by one of ours that kept its internal lock
// node skips the listing and the reads: four requests to acquire (create,
// getChildren, getW and the getACL beside it), one to release, as the
// mutex. On a path where Curator's contenders take turns
// with ours, ours take lease nodes as Curator's do.
//
// # What it guarantees
//
//   - At most N holders among all processes using the path (Curator's
//     InterProcessSemaphoreV2 and InterProcessSemaphoreMutex included), as
//     long as each holder's session lives and all agree on N (nothing
//     checks that they do, as in Curator).
//   - Fairness: contenders are served in the order they queued on the
//     internal mutex (FIFO).
//   - No herd: only the holder of the internal mutex watches lease nodes,
//     so a release wakes at most that one waiter; the others each watch
//     their predecessor in the internal mutex's queue. (With N > 1, a
//     waiter admitted by one release leaves its watches on the other
//     holders' nodes; each fires once when its node goes, an event with no
//     request. A waiter that gives up removes its watches from the server.)
//   - A deadline is kept: Acquire and TryAcquire (Mutex and Semaphore)
//     return at the latest 100 ms after ctx ends (plus scheduling; the
//     tests allow 250 ms), even when the connection is blackholed during
//     the internal lock's create or the lease transaction.
//   - Nothing is left behind: a failed, timed-out or cancelled acquire
//     deletes its internal lock node (a waiter has no lease node), and a
//     transaction whose answer was lost with the connection is resolved by
//     looking for our lease node by its id; if that search fails too (a
//     bounded conn.WithRetry), it goes on in the background until the
//     node is found and deleted or the session ends. What cannot be done within
//     those 100 ms goes on in the background, on a goroutine that ends
//     with the session: a create or transaction still in flight is
//     resolved once its answer comes or the connection is back, and what
//     it made is deleted (the lease node, or the internal lock node if the
//     transaction did not commit); if the session expires first, the nodes
//     go with it. A release whose outcome is unknown keeps deleting in the
//     background until the node is gone or the session ends, and says so
//     (lock.ErrReleasePending).
//   - Leases of a session that ends come back: lease nodes are ephemeral,
//     and the waiter watching them is notified.
//   - The holder can always learn that its lease is no longer safe:
//     Lease.Lost closes when the session's epoch ends (expiry, or the local
//     timer while cut off), when the lease's node is deleted by someone
//     else (seen through the node's watch, which the first call of Lost or
//     Revoked sets: see conn.Lease.Lost), or on Release (ReturnLease).
//   - A fencing token per grant (Lease.Fence: the czxid of the lease's
//     node, the lease node or the internal lock node kept as the lease,
//     and the grant's pass on it)
//     and guarded writes (Lease.GuardedWrite: a transaction that commits
//     only while that node exists). With one lease the tokens grow
//     strictly in grant order, Curator's holders' (their lease nodes'
//     czxids, compared with Fence.Zxid) included.
//   - In-process handoff, when asked for (lock.WithLocalHandoff; off by
//     default): the Mutex handles of one session and path share one lease
//     and pass it between them without a request, up to a bound, after
//     which the lease goes back to ZooKeeper. Every grant is a lease of its
//     own (released, it refuses guarded writes through GuardedWrite; Lost
//     closes with the node's); Lease.Fence grows strictly with every
//     grant. The lease is not handed on once its node is known deleted, in
//     an ended epoch, or while the connection is suspended (see
//     lock.WithLocalHandoff).
//
// # Not reentrant, on purpose
//
// Mutex is owned by the handle, like sync.Mutex, not by a goroutine: any
// goroutine may release it, and a second Acquire on a handle that holds it,
// from any goroutine, waits for that release (bounded by its context; the
// wait is local and costs ZooKeeper nothing). This suits a lock taken in
// one goroutine and released in another (a request handed to a worker, a
// callback). mutex.InterProcessMutex is the opposite: reentrant per
// goroutine, and released only by the goroutine that took it. A Semaphore
// handle hands out one lease per Acquire, even to the same goroutine, and
// takes back any lease it granted, from any goroutine.
//
// # What it does not guarantee
//
// Holding a lease is a lease on the ZooKeeper session, not a promise.
// Between the moment the server expires a session and the moment its client
// learns it, that client may still believe it holds a lease while another
// process already does; the local timer narrows the window, Lost reports
// its end, and only fencing (Fence, GuardedWrite) closes it for writes.
// Waiting is not bounded unless ctx is. TryAcquire gives up, as Curator's
// acquire with a zero timeout does, when another contender holds the
// internal mutex, even if that contender is about to leave a lease free. A
// client that creates lease nodes without holding the internal mutex (not
// Curator, not this package) would break the count, as would a third party
// deleting a contender's internal lock node; a lease node deleted by a
// third party is noticed through the lease (Lost, Fence, GuardedWrite).
//
// # Sealed nodes, and revocation
//
// The internal lock nodes and lease nodes are sealed by default: only the
// session that created one can change its data (a third party's write,
// Curator's Revoker included, fails with zk.ErrNoAuth), so the handover
// mark, and with one lease its promise that no lease node exists, cannot
// be forged; a waiter trusts a data change as a handover only on a node
// that was sealed when it read it, by its data and its ACL (see package
// mutex's documentation, which also says what a waiter cannot tell).
// With lock.WithRevocable the nodes carry the session's ACL as it is: Curator's
// Revoker, or lock.Revoke, can then ask the holder to release
// (Lease.Revoked), the holder keeps its lease until it releases, and the
// handoff is a plain delete (the next contender lists the lease nodes).
//
// # Errors
//
// Acquire, TryAcquire and Release (for a Semaphore, ReturnLease) follow
// the one contract of every lock of this module, a table in package lock
// (github.com/zkrecipes/zkrecipes/lock).
// Its errors for those are package lock's (lock.ErrNotHeld,
// lock.ErrReleasePending), read the same in every recipe:
// "semaphoremutex: release <path>: lock: not held".
//
// Sentinels, compared with errors.Is: lock.ErrNotHeld (ReturnLease of a
// lease the handle does not hold, or Release of a Mutex that is not held),
// lock.ErrReleasePending
// (deletion of the lease node not confirmed; continuing in the background),
// conn.ErrInvalidArgument (bad input to New or NewSemaphore: a nil
// session, fewer than one lease, a bad path or option). Errors of the
// caller's context (context.DeadlineExceeded, context.Canceled) and of the
// session (conn.ErrClosed after Close, ...) are wrapped.
package semaphoremutex
