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
// in the order they campaigned. At most one participant whose session
// lives leads, and it learns when leadership is lost; terms may still
// overlap, as docs/leader.md, "Two leaders", says: only fencing
// (Lease.Fence, GuardedWrite) closes that window.
//
// Errors: ErrCampaigning, ErrNoLeader, ErrLeadershipLost, lock.ErrNotHeld,
// lock.ErrReleasePending, conn.ErrInvalidArgument (bad input to New).
package leader
