// Package rwlock is a distributed read/write lock over ZooKeeper: readers
// share it, a writer holds it alone, and contenders are served in the
// order they queued.
//
//	rw, err := rwlock.New(sess, "/locks/catalog")
//	lease, err := rw.ReadLock().Acquire(ctx) // or rw.WriteLock()
//	if err != nil { ... }
//	defer rw.ReadLock().Release(context.WithoutCancel(ctx))
//	select {
//	case <-lease.Lost(): // the session ended: stop working
//	default:
//	}
//
// ReadLock and WriteLock return the two sides of the lock, each with the
// method set of the module's other locks (Acquire, TryAcquire, Release,
// Path), so multilock and the contract suite take them.
//
// # How it works
//
// Each acquire creates an ephemeral sequential node under the lock path:
// "<host>-R-<seq10>" for a reader, "<host>-W-<seq10>" for a writer, where
// host is WithHost's identity (default: the host name). Names are parsed
// from the right, so the host may contain '-'. The node's data says which
// process queued it (host name, pid) and carries a unique acquire id, by
// which a node whose create answer was lost with the connection is found
// again instead of being left behind as an orphan.
//
//   - A reader holds the lock when no W node sorts before its own; until
//     then it watches the nearest W node before it, and nothing else.
//   - A writer holds the lock when its node is first; until then it
//     watches its immediate predecessor, and nothing else.
//
// A waiter lists the children once, when it queues, and then decides from
// that listing and the notifications it gets: the part of the queue before
// a node can only shrink (docs/design.md).
//
// # No herd
//
// Every waiter watches exactly one node, so the deletion of a node notifies
// only the waiters that watch it:
//
//   - A writer's node is watched by the readers queued right behind it (up
//     to the next writer) and, if the node right behind it is a writer's,
//     by that writer. When the writer that holds the lock releases, those
//     are exactly the waiters that may now proceed: the run of readers
//     behind it, or the one writer. The writers and readers queued further
//     back hear nothing.
//   - A reader's node is watched only by the writer right behind it, if
//     any; other readers never watch readers. When readers release, at most
//     that writer wakes. If readers queued before it still hold the lock
//     (they release in another order than they queued), it goes back to
//     watching the next one, for one request, not a re-listing.
//
// So a release costs one notification per waiter that proceeds, plus at
// most one per writer that waits behind a run of readers, and never one per
// waiter in the queue: draining the queue is linear in its length, not
// quadratic as with every waiter watching the children.
//
// # Downgrade
//
// A goroutine that holds the write lock may take the read lock; it then
// holds both, and after releasing the write lock still holds the read lock.
// The read acquire queues a real R node, which is granted at once, without
// waiting for the nodes before it: nobody else can hold the lock while our
// W node exists. So the grant is made only if our W node still exists once
// the R node does (one exists request): if someone else deleted it (a
// writer behind it may be in), or the write lease is lost, the R node is
// deleted again and the acquire fails with conn.ErrLeaseLost. (Asking the
// usual reader's question, "no W before me?", would wait for our own W
// node, or for a writer queued between our W node and our new R node,
// which itself waits for our W node: a deadlock. Ignoring only our own W
// node does not escape the second case.)
//
// The read grant stands on the W node for as long as the W node is what
// keeps the others out: its GuardedWrite checks the W node, the W node's
// deletion by someone else makes it lost (Lost, once watched), and its
// Fence is the W node's czxid with pass 1, 2, ... (one per downgrade
// under that write grant): it sorts after the write grant and
// before the grant of any node queued after the W node, a writer between
// our two nodes included.
//
// Releasing the write lock then looks at the queue once (one getChildren).
// If no writer is queued between our W and R nodes, the read grant moves
// onto its R node (its checks are then on the R node; its Fence stays) and
// the W node is deleted: the readers queued behind it join us, and any
// writer behind our R node waits for it. If a writer is queued between
// them, that writer would get in as soon as our W node went, while we
// still read, because its node sorts before our R node. So the W node is
// kept until the read lock is released, and the read grant stays on it;
// the write lease is marked released all the same (its Lost closes, its
// GuardedWrite is refused). The read release deletes the R node, then the W
// node. Meanwhile readers queued behind our W node wait too. The kept W
// node's ACL is set again, unchanged (its ACL version rises; its data, which
// the waiter behind reads as a release mark, is left alone), so that
// Participants and the zkrecipes command show it kept, not holding; the
// downgrade's R node says it is one in its
// data, and both show it holding while the node it stands on (then the
// first node, of its session) is there. If the listing shows our W node gone (deleted by
// someone else), the read grant stays on it, lost: its GuardedWrite is
// refused, and Lost closes once watched. Asking for the write
// lock again while holding only the read lock is an upgrade, refused even
// while the W node is kept.
//
// Upgrade (the write lock asked for while holding only the read lock) is
// refused at once with ErrUpgrade: two readers doing it would wait for
// each other forever.
//
// # What it guarantees
//
//   - Readers share, writers exclude: while a writer holds the lock, no
//     other contender (reader or writer, of any process using the lock
//     path) holds it, as long as each holder's session lives.
//   - Fairness: contenders are granted in the order their nodes were
//     created; a reader queued behind a writer waits for it even while
//     other readers hold the lock, so writers are not starved.
//   - Reentrancy per goroutine for both sides, counted locally: further
//     Acquire calls of the holding goroutine return the same *conn.Lease
//     at once without a ZooKeeper call, and it must call Release as many
//     times. Another goroutine of the same process is a separate contender.
//     Release from a goroutine that does not hold that side, or more often
//     than acquired, is an error, never a panic, and changes nothing.
//   - A deadline is kept: Acquire and TryAcquire of either side return at
//     the latest 100 ms after ctx ends (plus scheduling; the tests allow
//     250 ms), even when the connection is blackholed before or during the
//     create.
//   - Nothing is left behind: a failed, timed-out or cancelled acquire
//     deletes its node, including a node whose create answer was lost,
//     also when the search for it fails (a bounded conn.WithRetry): it
//     goes on in the background until the node is found and deleted or the
//     session ends.
//     What cannot be done within those 100 ms goes on in the background,
//     on a goroutine that ends with the session: a create still in flight
//     is resolved (its answer, or our node looked for by its unique id once
//     the connection is back) and its node deleted; if the session expires
//     first, the node goes with it. A release whose outcome is unknown
//     keeps deleting in the background until the node is gone or the
//     session ends.
//   - The holder can always learn that the lock is no longer safe:
//     Lease.Lost closes when the session's epoch ends (expiry, or the local
//     timer while cut off), when the node is deleted by someone else (seen
//     through the node's watch, which the first call of Lost or Revoked
//     sets: see conn.Lease.Lost; for a downgrade's read grant, also the W
//     node it stands on), or on Release.
//   - No write into a holder's node lets anyone else in: the nodes are
//     sealed (only their own session may change them; a third party's
//     set-data fails with zk.ErrNoAuth), and a waiter trusts a data change
//     as a writer's release only on a node that was sealed when it read
//     it, by its data and its ACL (see package mutex, which also says what
//     a waiter cannot tell). With lock.WithRevocable the nodes keep
//     the session's ACL as it is, so that lock.Revoke (or Curator's Revoker)
//     can ask a holder to release (Lease.Revoked); the holder keeps the
//     lock until it releases it. A write node kept after a downgrade's
//     write release holds no write lock: a request to it goes to the read
//     lease that stands on it. lock.Revoke on a sealed node fails with an
//     error matching lock.ErrNotRevocable.
//   - A fencing token per grant (Lease.Fence: the node's czxid, growing
//     with every node created, and pass 0; a downgrade's read grant has
//     its W node's czxid and a pass above 0, see Downgrade), growing
//     strictly in the order of the grants, and guarded writes
//     (Lease.GuardedWrite: a transaction that commits only while our node,
//     or the W node a downgrade's read grant stands on, exists). Readers
//     get tokens too.
//
// # What it does not guarantee
//
// Holding the lock is a lease on the ZooKeeper session, not a promise.
// Between the moment the server expires a session and the moment its client
// learns it, that client may still believe it holds the lock while another
// already does; the local timer narrows the window, Lost reports its end,
// and only fencing (Fence, GuardedWrite) closes it for writes. Waiting is
// not bounded unless ctx is. A node deleted by a third party while its
// owner is queued is noticed only once granted, through the lease.
// Reentrancy is per goroutine and per handle: a goroutine's acquires
// through two handles on one path are separate contenders, and a reader
// of one handle asking for the write lock through another deadlocks. No
// upgrade. No other client library's read/write nodes are recognised
// (Curator's InterProcessReadWriteLock names its nodes differently).
//
// # Errors
//
// Acquire, TryAcquire and Release follow the one contract of every lock of
// this module, a table in package lock (github.com/zkrecipes/zkrecipes/lock).
// Its errors for those are package lock's (lock.ErrNotHeld,
// lock.ErrReleasePending, lock.ErrNotOwner), read the same in every recipe:
// "rwlock: release <path>: lock: not held".
//
// Sentinels, compared with errors.Is: ErrUpgrade (the write lock asked for
// while holding only the read lock), lock.ErrNotOwner, lock.ErrNotHeld (Release by a
// goroutine that does not hold that side), lock.ErrReleasePending (deletion of
// the node not confirmed; continuing in the background),
// conn.ErrInvalidArgument (bad input to New: a nil session, a bad path,
// option or host). Errors of the caller's context (context.DeadlineExceeded,
// context.Canceled) and of the session (conn.ErrClosed after Close,
// conn.ErrLeaseLost for a re-entry or downgrade on a lost lease) are
// wrapped.
package rwlock
