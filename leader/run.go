package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Run campaigns, then runs fn while we lead. fn's ctx is cancelled, with
// a cause matching ErrLeadershipLost, when the term's lease is lost (its
// Lost closes): the session's epoch ended (expiry confirmed by the server,
// the local timer, Close), our node was deleted by someone else, Resign was
// called, or the session's suspension policy (conn.WithSuspendedAsLost)
// counts a suspended connection as lost; and when Run's ctx ends.
//
// How that compares with the moment another participant may lead:
//
//   - The session ending unseen (partition, a server cut off from its
//     quorum, a frozen leader): with the session's quorum timer
//     (the default; conn.WithLastHeardTimer opts out), the epoch ends, and fn's ctx is
//     cancelled, before the ensemble can expire the session and let
//     another participant lead: at least T/3 − tickTime/2 before (T the
//     session timeout; 5T/12 on a standalone server), as conn's "The local
//     timer" works out, unless this process is paused or starved for
//     longer than that. TestNoOverlapWhenTheLeadersFollowerLosesQuorum:
//     no overlap. With conn.WithLastHeardTimer(), another participant may
//     lead first (see conn's "What it does not guarantee").
//   - Our node deleted by someone else while fn runs (one deleted while
//     we waited never starts a term: see Campaign), or Resign called from
//     another goroutine while fn runs: the next participant may lead as soon as
//     the node is gone, and fn's ctx is cancelled only when we hear of it
//     (one notification, or the delete's answer).
//
// fn must return promptly once its ctx is done: until it returns, it may
// still be running while another participant leads, so writes that must
// not overlap go through the term's lease (LeaseFrom(ctx)): its
// GuardedWrite, or its Fence as a fencing token.
//
// When fn returns, Run resigns (with a context of its own, bounded by the
// session timeout, so that a cancelled ctx still deletes our node). Run
// returns:
//
//   - the campaign's error, if we never led (ctx ended, session closed);
//   - an error matching ErrLeadershipLost (and conn.ErrLeaseLost) if the
//     term ended because leadership was lost; it also wraps fn's error when
//     that is not just its ctx's;
//   - otherwise fn's error, joined with a resign error if there was one
//     (lock.ErrReleasePending).
//
// With WithRequeue(), Run campaigns again after a term that ended with
// fn returning nil or with leadership lost, as long as ctx lives; it then
// returns ctx's error, fn's non-nil error from a term that was still safe,
// or the error of the resign after a safe term when it failed (the server
// refused the delete: the handle still leads, call Resign; or
// ErrReleasePending), as Run without requeue does. ErrCampaigning when
// this handle already campaigns or leads. A nil fn is an error, before
// anything is queued.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		return fmt.Errorf("leader: run %s: nil function", e.Path())
	}
	for {
		l, err := e.Campaign(ctx)
		if err != nil {
			return err
		}
		err = e.term(ctx, l, fn)
		if !e.cfg.requeue {
			return err
		}
		if ctx.Err() != nil {
			// fn answered its ctx's end with nil, or the term was lost as
			// ctx ended: either way, as for a term followed by a campaign
			// that ctx ended, Run's answer is ctx's.
			if err == nil || errors.Is(err, ErrLeadershipLost) {
				err = fmt.Errorf("leader: run %s: %w", e.Path(), queue.CtxErr(ctx))
			}
			return err
		}
		if err != nil && !errors.Is(err, ErrLeadershipLost) {
			return err
		}
	}
}

// term runs fn under lease l and resigns.
func (e *Election) term(ctx context.Context, l *conn.Lease, fn func(ctx context.Context) error) error {
	if m := queue.Metrics(e.sess); m != nil {
		start := time.Now()
		m.Leader(conn.LeaderMetric{Path: e.Path(), Leading: true})
		defer func() { m.Leader(conn.LeaderMetric{Path: e.Path(), Duration: time.Since(start)}) }()
	}
	fctx, cancel := context.WithCancelCause(context.WithValue(ctx, leaseKey{}, l))
	defer cancel(nil)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-l.Lost():
			cancel(fmt.Errorf("%w: %w", ErrLeadershipLost, l.Err()))
		case <-stop:
		}
	}()
	ferr := fn(fctx)
	close(stop)
	<-done
	lost := l.Err() // before our own resign closes Lost

	rctx, rcancel := queue.CleanupContext(ctx, l.Epoch())
	defer rcancel()
	rerr := e.resign(rctx, l)
	if errors.Is(rerr, lock.ErrReleasePending) {
		e.sess.Logger().Info("leader: resign after the term is pending")
	}
	switch {
	case lost != nil && ferr != nil && !errors.Is(ferr, context.Canceled):
		return fmt.Errorf("%w: %s: %w (fn: %w)", ErrLeadershipLost, e.Path(), lost, ferr)
	case lost != nil:
		return fmt.Errorf("%w: %s: %w", ErrLeadershipLost, e.Path(), lost)
	}
	return errors.Join(ferr, rerr)
}

// leaseKey is the context key of a term's lease.
type leaseKey struct{}

// LeaseFrom returns the lease of the term whose function Run called with
// ctx (or a context derived from it), or nil if ctx is no term's. The lease
// is what the function writes through: GuardedWrite commits only while the
// term's node exists, and Fence is its fencing token.
func LeaseFrom(ctx context.Context) *conn.Lease {
	l, _ := ctx.Value(leaseKey{}).(*conn.Lease)
	return l
}
