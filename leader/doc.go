// Package leader is leader election over ZooKeeper: Election, on the same
// queue engine and session manager as the locks of this module, and on the
// same path as Apache Curator's LeaderLatch (same node names, same data).
//
//	e, err := leader.New(sess, "/services/billing/leader", "host-1")
//	err = e.Run(ctx, func(ctx context.Context, lease *conn.Lease) error {
//		// We lead. ctx is cancelled when leadership is lost (see Run);
//		// lease.GuardedWrite commits only while we lead.
//		return work(ctx, lease)
//	})
//
// or, step by step:
//
//	lease, err := e.Campaign(ctx) // blocks until we lead
//	defer e.Resign(context.WithoutCancel(ctx))
//	<-lease.Lost()                 // leadership lost: stop
//
// # How it works
//
// Each participant creates an ephemeral sequential node
// "_c_<uuid>-latch-<seq>" under the election path, with its participant id
// as data (Curator's LeaderLatch does the same). The lowest sequence number
// leads; every other participant watches only its immediate predecessor, so
// a leader's departure wakes one participant (no herd). Resign deletes the
// node plainly: a LeaderLatch follower reacts to its predecessor's deletion
// only.
//
// # What it guarantees
//
//   - At most one leader among all participants on the path (ours and
//     Curator LeaderLatch's) whose sessions live: leadership is a lease on
//     the participant's ZooKeeper session. A node deleted by someone else
//     while its participant waits is never led from: before Campaign
//     returns (and Run calls its function) it reads our node once (the
//     lease's Fence, one request per term, or the queue's own read of it
//     after the deletion that woke it) and, if the node is gone, queues a
//     new one and waits again.
//   - The leader always learns that leadership is lost: the lease's Lost
//     closes, and Run cancels its function's ctx (cause:
//     ErrLeadershipLost), when the session's epoch ends (the server expired
//     it, or the local timer ran out), when our node is deleted by someone
//     else, on Resign, or when the session's suspension policy
//     (conn.WithSuspendedAsLost) counts a suspended connection as lost.
//   - When the session ends unseen (a partition, a server cut off from its
//     quorum), the leader learns it before anyone else can lead: with the
//     session's quorum timer (the default; conn.WithLastHeardTimer opts out) its epoch
//     ends at least T/3 − tickTime/2 of the session timeout T before the
//     ensemble can expire the session (see conn's package documentation),
//     unless the process is paused or starved for longer than that.
//   - A fencing token per term (Lease.Fence, the node's czxid, growing with
//     every leader) and guarded writes (Lease.GuardedWrite: a transaction
//     that commits only while our node exists), so that a stale leader's
//     writes are refused.
//   - Nothing is left behind: a cancelled, timed-out or failed Campaign
//     deletes its node, including one whose create answer was lost with
//     the connection, also when the search for it fails (a bounded
//     conn.WithRetry): it then goes on in the background until the node
//     is found and deleted or the session ends;
//     Run resigns when its function returns, even after its ctx ended.
//     A cancelled Campaign that was waiting, and Observe when it ends,
//     remove their watch from the server (see package conn).
//   - Participants become leader in the order they campaigned.
//
// # What it does not guarantee
//
// Terms may overlap when our node is deleted by someone else while we
// lead, or Resign is called from another goroutine while Run's function
// runs: the next participant may lead as soon as the node is gone, and we
// hear of it one notification (or one answer) later; with
// conn.WithLastHeardTimer(), when the session ends unseen; and when this
// process is paused or starved for longer than the quorum timer's margin.
// Lost and Run's ctx report the end; only fencing (Fence, GuardedWrite)
// closes the window for writes. A function that ignores its ctx keeps
// running after leadership is lost. Leader, Participants and Observe are
// snapshots: the leader may have changed by the time they return.
//
// # Errors
//
// Sentinels, compared with errors.Is: conn.ErrInvalidArgument (bad input
// to New: a nil session, a bad path, an empty id), ErrCampaigning (a
// handle campaigns or leads already), lock.ErrNotHeld (Resign without leading),
// ErrNoLeader (Leader on an empty election), ErrLeadershipLost (Run's term
// ended because leadership was lost; matches conn.ErrLeaseLost),
// lock.ErrReleasePending (Resign not confirmed; deleting in the
// background), as in every lock of this module: package lock has the table
// of their contract. Errors of the caller's
// context and of the session (conn.ErrClosed, ...) are wrapped.
package leader
