// Package queue is the engine of every sequential-node recipe: the mutex,
// the read/write lock and the semaphore's internal lock. A recipe is a
// Queue with a Config; the engine does the rest.
//
// # How a recipe plugs in
//
// A recipe supplies two values:
//
//   - a Schema: how its nodes are named (Prefix) and which children count
//     as contenders (Parse). ProtectedSchema is Curator's
//     "_c_<uuid>-<name>-<seq>" (mutex: Name "lock"), which also recognises
//     kazoo's and go-zookeeper's lock nodes; HostKindSchema is the
//     read/write lock's "<host>-R-<seq>" / "<host>-W-<seq>".
//   - a Predicate: the pure function that decides, from the contenders in
//     queue order and our index, whether we hold the lock and whom to watch.
//     First (mutex, writer) and NoneBefore("W") (reader) are here.
//
// For example, the read side of a read/write lock:
//
//	q, err := queue.New(sess, path, queue.Config{
//		Schema: queue.HostKindSchema{Host: queue.Hostname(), Kind: "R"},
//		Decide: queue.NoneBefore("W"),
//	})
//	lease, err := q.Acquire(ctx) // ... q.Release(ctx, lease)
//
// A Queue keeps no state between acquires; reentrancy and ownership are the
// recipe's. While they queue, a session's waiters on one path share their
// listings (see "Many waiters of one session").
//
// # The algorithm
//
//  1. Create an ephemeral sequential node under the lock path, named by the
//     schema with a fresh unique acquire id; its data (NodeData, JSON) says
//     host, pid and id. A missing lock path is created, with its parents,
//     as container nodes, and the create retried once. If the create's
//     answer is lost with the connection, the node is looked for by its id
//     (after a sync) before creating again.
//  2. List the children once (a listing sent after our create, which the
//     session's other waiters on the path may share), keep those the
//     schema recognises, sorted by sequence number (Before: serial-number
//     order, which survives the 32-bit counter wrapping to negative
//     numbers).
//  3. Ask the predicate. Acquired: return a conn.Lease
//     (connlink.Epoch.NewLease), after a read of our own node if the
//     decision rests on a notification of the plain deletion of a node of
//     our own session (see "A grant after a plain deletion").
//     Otherwise GetW the node it names: if it is already gone (zk.ErrNoNode)
//     or its deletion is notified, drop it from the cached list and go to 3
//     (see below for when the list is refreshed); any other event sets the
//     watch again.
//  4. On cancel, timeout or error, delete our node (Settle: on the epoch's
//     context, not the caller's, which may be the one that ended; the
//     caller waits for it until Grace after ctx ended); if the epoch ends
//     while waiting, our node went with it: go to 1 in the next epoch. The
//     create itself runs detached (Detach): ctx never waits for it past
//     its end, and a create abandoned in flight is resolved and its node
//     deleted in the background, bound to the epoch.
//
// # Deciding from the first listing
//
// Curator and go-zookeeper's zk.Lock list the children again after every
// notification. The engine keeps its first listing instead, which is
// correct for every predicate that meets Predicate's conditions:
//
//   - The server gives sequence numbers in the order it applies creates, so
//     every node that sorts before ours was created before ours. Our listing
//     comes after our create in our session's order, so it shows every node
//     before ours that still exists. No node can later join the part of the
//     queue before ours: that part can only shrink, and the cached list is
//     always a superset of it.
//   - A decision "not acquired, watch X" is acted on only while X exists
//     (GetW on a node that left answers zk.ErrNoNode, and X is dropped), and
//     X existing keeps us out whatever else has left. A decision "acquired"
//     made on a superset of the live nodes before ours is the decision the
//     live set gives, since removing nodes can only turn "not acquired"
//     into "acquired" for these predicates.
//
// What it costs: when the watched node goes, the other cached entries may
// have left unnoticed. If none of them can block us (the predicate grants
// now), we are granted with no request (after a node of our own session:
// a read of our own node, see "A grant after a plain deletion"): a waiter
// that queued right behind the holder takes over on the holder's delete,
// one notification. If
// exactly one can (the predicate would grant without it), the next GetW
// checks it and watches it if it is still there. If several can, checking
// them one by one would cost a request each (in a FIFO handoff they have
// all left: our predecessor held the lock), so the children are listed
// once and the fresh list replaces the cache, unless what the session knows
// tells without a listing (see "Many waiters of one session"). Every
// wake-up therefore costs at most one round trip before the next watch; a
// re-listing engine always pays one. Config.Relist restores the Curator
// behaviour, for comparison.
//
// The waiter does not keep the whole listing while it waits, only what
// these decisions need: before its first watch it works out, from the
// listing, what the watched node's plain deletion would lead to (a grant,
// or exactly one more node to watch), and keeps that node, the watched one
// and its own. When the answer would take more than one more node, or
// copying more than a few dozen entries to work it out (maxCopy), it keeps
// the watched node and its own and marks the cache partial: a grant is
// then never decided from the cache, and a plain deletion of the watched
// node costs a listing (as it did with the whole listing kept when more
// than one node still blocked us; for a First waiter deeper than maxCopy
// that is always the case) unless the session's view of the queue tells,
// while a handover of it grants us at once when nothing between it and
// ours blocked us at the listing. A waiter's memory is so independent of the
// queue's length (TestHeapPerWaiterDoesNotGrowWithQueue), and
// TestShrunkCacheDecidesAsAListing checks every such decision against a
// fresh listing.
//
// # Many waiters of one session
//
// Thousands of goroutines of one process queueing on one lock at once
// would otherwise each list the whole queue after their create: the
// server would send each name N/2 times on average, and queueing N
// waiters would be quadratic. Instead a waiter that needs a listing joins
// the session's next listing of the path (one per path and schema, kept in
// the session's shared map while used); one getChildren, sent once the
// round is closed, answers all who joined before. Each of them joined
// after its create was written (or answered), so the listing is answered
// after every one of their creates and shows their nodes. The answer is
// parsed once and shared read-only; while one round is in flight the next
// gathers waiters.
//
// The session also keeps its latest listing of the path, with the nodes of
// it that it knows have left since (a view, kept while an attempt of the
// session on the path lasts): those whose delete of ours was answered,
// whose deletion a watch of ours was notified of, or that a read of ours
// found gone. A sequential node's name is never given again, so what the
// view knows stays true; and the sequence numbers of one parent only grow,
// so a listing that shows our node (answered after our create) shows every
// node before ours that is left now or ever will be, however old it is. A
// waiter that cannot decide from its cache after a plain deletion takes,
// instead of a listing, the view's nodes before its own that are not known
// gone: a superset of those still there, as good as a fresh listing for
// the predicate's decision. If they leave at most one node blocking it,
// it decides from them (a grant, or a GetW on that node); otherwise it
// lists. Its cache drops the nodes the view knows gone in any case. When
// the session's own waiters drain a queue by plain deletes (leader's
// Resign; a waiter that gives up), each one is so granted on its
// predecessor's deletion without listing: the server sends the queue's
// names in the few rounds of their first listings, not once more per
// waiter. The view costs the session the listing it keeps (about 100
// bytes per node) and a flag per node, not each waiter.
//
// # The handover mark
//
// In a FIFO handoff our predecessor held the lock, so the stale entries
// before it are all gone, but a plain deletion cannot tell us that. A
// mutual exclusion holder (Config.MarkRelease, for First queues) therefore
// releases with ReleaseOps: one transaction that sets its node's data and
// deletes it. The waiter's data watch fires on the data change, which says
// "the node before you held the lock": nothing before it existed when it
// was granted, and nothing can join the queue before a node that exists,
// so the waiter drops every cached entry up to it and decides with no
// request at all.
//
// The mark must not be forgeable: a write into a holder's node by anyone
// else would otherwise admit the waiter while the holder still holds. So
// the engine's nodes are sealed (NodeACL): their ACL is the session's
// without WRITE and ADMIN, plus the session's own random digest identity
// (conn adds it to every epoch's connection) with ALL. Only the node's own
// session can set its data or its ACL; a foreign set-data fails with
// zk.ErrNoAuth. The node's data says it is sealed (NodeData.Sealed), but
// anyone may write that into a node of their own; so a waiter trusts a data
// change as the mark only if, when it set its watch, the node's data was
// ours with that flag at data version 0, and its ACL, which the waiter
// reads together with the data (a getACL sent with the getW), had never
// been changed and gave WRITE and ADMIN to one digest identity alone
// (attempt.await argues why that suffices, and names the one client it
// cannot tell from ours: one impersonating a session of ours with an
// identity of its own). On any other node (a revocable one, see below, or
// a foreign client's) a data change only means "look again": the waiter
// reads the node again (one request) and keeps watching it while it
// exists. What sealing costs: one AddAuth per epoch, before the epoch is
// handed out, and one getACL per wait, answered right behind the getW, so
// that no round trip is added to a handoff. Deleting a node is governed by its parent's ACL, so a
// third party can still delete a holder's node: that is a "gone" like any
// other, the next waiter enters, and the holder learns it from its lease
// (Lost).
//
// Config.Revocable makes a queue's nodes revocable instead: they carry the
// session's ACL as it is, so that Curator's Revoker, or lock.Revoke, can write
// "__REVOKE__" into them, and the holder learns it from its lease
// (conn.Lease.Revoked) without losing the lock. Its release is then a
// plain delete (ReleaseOps), since a data change of such a node proves
// nothing: the waiter behind decides as after any deletion (at most one
// round trip), and pays one read per revoke request while it waits. A handoff
// of sealed nodes is then the holder's one transaction and one
// notification, with no request after it: about 11 server packets
// (create, getChildren, getW, getACL, the notification, the release), as
// many as Curator's or go-zookeeper's re-listing waiters, which send their
// getChildren only after the notification, one round trip later. Curator
// and kazoo waiters watching a marked node simply wake up and list again,
// as they do on a deletion; Curator and kazoo holders delete plainly, and
// our waiters then check as above. A holder whose transaction's answer is
// lost with the connection falls back to a plain (retried) delete.
//
// A recipe can promise more to its own kind through the mark: every node
// carries Config.Tag in its data, the waiter reads its predecessor's data
// when it sets its watch, and AcquireGrant reports the tag of the holder
// whose mark granted it (Grant.From). The semaphore's one-lease contenders
// use it to say "no lease node is left" (package semaphoremutex). A holder
// that cannot keep its kind's promise gives its node back with Withdraw, a
// plain delete.
//
// # A grant after a plain deletion
//
// The server ends a session by deleting its ephemeral nodes in one
// transaction and notifies the watches on them, the session's own among
// them, before it closes the session's connection: a waiter watching a
// node of its own session can be told of that node's deletion before it
// hears that its session, and its own node, are gone. So a grant decided
// on a notification of the plain deletion of a node of our own session,
// or on what the session's view learnt, waits for a read of our own node
// sent after it, which must find the node there and ours (confirm); when
// the wake-up sends a GetW anyway, the read goes out beside it and costs
// no round trip. A grant on a fresh listing, on a handover mark or on the
// deletion of another session's node needs none: that deletion is not
// part of our session's end (a grant in a session the server is ending
// for other reasons is the session-expiry window every grant has, see
// conn's doc). The read gives the lease our node's czxid, so its Fence
// need not read it again.
//
// # What the engine does not notice
//
// A node of ours deleted by a third party (an operator) while we wait is
// not noticed until we are granted, or woken by a plain deletion (then the
// read of our own node above notices it and we queue again); the lease
// reports it otherwise (Fence and GuardedWrite fail with
// conn.ErrLeaseLost; Lost closes once watched). Re-listing would notice
// it; the cost is a getChildren per handoff.
package queue
