package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/report"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// Run campaigns, then runs fn with the term's lease while we lead. fn's
// ctx is cancelled when Run's ctx ends or, with a cause matching
// ErrLeadershipLost, when the lease is lost; fn must then return promptly.
// When fn returns, Run resigns and returns: the campaign's error if we
// never led; ErrLeadershipLost (with fn's error unless it is its ctx's) if
// the term was lost; else fn's error joined with the resign's. WithRequeue
// campaigns again instead.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context, lease *conn.Lease) error) error {
	if fn == nil {
		return fmt.Errorf("leader: run %s: nil function", e.path())
	}
	for {
		l, err := e.Campaign(ctx)
		if err != nil {
			return err
		}
		err = e.term(ctx, l, fn)
		if !e.cfg.Requeue {
			return err
		}
		if ctx.Err() != nil {
			// The term ended with ctx: Run's answer is ctx's.
			if err == nil || errors.Is(err, ErrLeadershipLost) {
				err = fmt.Errorf("leader: run %s: %w", e.path(), bg.CtxErr(ctx))
			}
			return err
		}
		if err != nil && !errors.Is(err, ErrLeadershipLost) {
			return err
		}
	}
}

// term runs fn under lease l and resigns.
func (e *Election) term(ctx context.Context, l *conn.Lease, fn func(ctx context.Context, lease *conn.Lease) error) error {
	start := time.Now()
	report.Leader(e.sess, metrics.Leader{Path: e.path(), Leading: true})
	defer func() { report.Leader(e.sess, metrics.Leader{Path: e.path(), Duration: time.Since(start)}) }()
	fctx, cancel := context.WithCancelCause(ctx)
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
	ferr := fn(fctx, l)
	close(stop)
	<-done
	lost := l.Err() // before our own resign closes Lost

	rctx, rcancel := bg.CleanupContext(ctx, l.Epoch())
	defer rcancel()
	rerr := e.resign(rctx, l)
	if errors.Is(rerr, lock.ErrReleasePending) {
		connlink.Of(e.sess).Logger().Info("leader: resign after the term is pending")
	}
	switch {
	case lost != nil && ferr != nil && !errors.Is(ferr, context.Canceled):
		return fmt.Errorf("%w: %s: %w (fn: %w)", ErrLeadershipLost, e.path(), lost, ferr)
	case lost != nil:
		return fmt.Errorf("%w: %s: %w", ErrLeadershipLost, e.path(), lost)
	}
	return errors.Join(ferr, rerr)
}
