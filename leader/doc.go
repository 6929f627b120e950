// Package leader is leader election over ZooKeeper: Election, on the same
// path as Apache Curator's LeaderLatch (same node names, same data).
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
// Each participant creates an ephemeral sequential node
// "_c_<uuid>-latch-<seq>" whose data is its participant id. The lowest
// leads; every other watches only its predecessor, so participants lead
// in the order they campaigned, and a leader's departure wakes one.
//
// # What it guarantees
//
//   - At most one leader among the participants on the path (ours and
//     LeaderLatch's) whose sessions live. A node deleted by someone else
//     while its participant waits is never led from.
//   - The leader learns that leadership is lost: the lease's Lost closes
//     and Run cancels its function's ctx (cause ErrLeadershipLost). With
//     the session's default quorum timer, a session that ends unseen (a
//     partition) is noticed before the ensemble can let anyone else lead,
//     unless the process is paused for longer than the timer's margin.
//   - A fencing token per term (Lease.Fence, growing with every leader)
//     and guarded writes (Lease.GuardedWrite), so that a stale leader's
//     writes can be refused.
//   - Nothing is left behind: a failed Campaign deletes its node and its
//     watch, and Run resigns when its function returns.
//
// # What it does not guarantee
//
// Terms may overlap when our node is deleted by someone else while we
// lead, when Resign is called from another goroutine while Run's function
// runs, with conn.WithLastHeardTimer when the session ends unseen, and
// when the process is paused for longer than the quorum timer's margin.
// Only fencing closes that window for writes; see docs/leader.md, "Two
// leaders". A function that ignores its ctx keeps running after
// leadership is lost. Leader, Participants and Observe are snapshots.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrCampaigning, ErrNoLeader,
// ErrLeadershipLost (matches conn.ErrLeaseLost), lock.ErrNotHeld (Resign
// without leading), lock.ErrReleasePending (Resign not confirmed; deleting
// in the background), conn.ErrInvalidArgument (bad input to New: a nil
// session, a bad path, an empty id). Errors of ctx and of the session are
// wrapped.
package leader
