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
// in the order they campaigned.
//
// # What it guarantees
//
//   - At most one leader among the participants on the path (ours and
//     LeaderLatch's) whose sessions live.
//   - The leader learns that leadership is lost: the lease's Lost closes
//     and Run cancels its function's ctx (cause ErrLeadershipLost), with
//     the default quorum timer before anyone else can lead.
//   - A fencing token per term (Lease.Fence) and guarded writes
//     (Lease.GuardedWrite), so that a stale leader's writes can be refused.
//   - Nothing is left behind: a failed Campaign deletes its node and its
//     watch, and Run resigns when its function returns.
//
// # What it does not guarantee
//
// Terms may overlap (our node deleted by someone else, Resign from another
// goroutine while Run's function runs, conn.WithLastHeardTimer, a process
// paused past the timer's margin): only fencing closes that window; see
// docs/leader.md, "Two leaders". Leader, Participants and Observe are
// snapshots.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrCampaigning, ErrNoLeader,
// ErrLeadershipLost (matches conn.ErrLeaseLost), lock.ErrNotHeld,
// lock.ErrReleasePending, conn.ErrInvalidArgument (bad input to New).
// Errors of ctx and of the session are wrapped.
package leader
