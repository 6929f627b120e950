// Package bg is the work that outlives a caller's context: it runs on an
// epoch's context, and the caller waits for it until Grace after its ctx.
package bg

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"go.uber.org/zap"
)

// Grace is how long an acquire whose ctx ended still waits for its cleanup
// before leaving it to a goroutine bound to the epoch.
const Grace = 100 * time.Millisecond

// GraceContext keeps ctx's values, not its cancellation: it ends Grace
// after ctx ends, and at the latest after limit.
func GraceContext(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	end := time.Now().Add(limit)
	if d, ok := ctx.Deadline(); ok && d.Add(Grace).Before(end) {
		end = d.Add(Grace)
	}
	c, cancel := context.WithDeadline(context.WithoutCancel(ctx), end)
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(Grace, cancel) })
	return c, func() { stop(); cancel() }
}

// CleanupContext is GraceContext bounded by the session timeout.
func CleanupContext(ctx context.Context, ep *conn.Epoch) (context.Context, context.CancelFunc) {
	return GraceContext(ctx, connlink.Of(ep).Timeout())
}

// Settle runs f, which removes what an acquire left, under ep's context,
// waiting for it until Grace after ctx ended.
func Settle(ctx context.Context, ep *conn.Epoch, log *zap.Logger, f func(context.Context) error) {
	done := make(chan struct{}) // closed when f returns
	go func() {
		defer close(done)
		if err := f(connlink.Of(ep).Context()); err != nil && ep.Err() == nil {
			log.Warn("removing what an abandoned acquire left failed", zap.Error(err))
		}
	}()
	gctx, cancel := GraceContext(ctx, connlink.Of(ep).Timeout())
	defer cancel()
	select {
	case <-done:
	case <-gctx.Done():
		log.Debug("removal of what an abandoned acquire left goes on in the background")
	}
}

// Detach runs op, a write whose outcome must be learnt, under ep's context
// (ectx), checking ctx before each write. If ctx ends first, Detach
// returns its error with detached true, and undo removes what op made.
func Detach[T any](ctx context.Context, ep *conn.Epoch, log *zap.Logger,
	op func(ctx, ectx context.Context) (T, error),
	undo func(ectx context.Context, v T, err error) error,
) (v T, detached bool, err error) {
	type result struct {
		v   T
		err error
	}
	if ctx.Done() == nil { // ctx never ends: nothing to detach from
		v, err := op(ctx, connlink.Of(ep).Context())
		return v, false, err
	}
	res := make(chan result, 1) // buffered: the answer may come after we stopped waiting
	go func() {
		v, err := op(ctx, connlink.Of(ep).Context())
		res <- result{v, err}
	}()
	select {
	case r := <-res:
		if ctx.Err() == nil {
			return r.v, false, r.err
		}
		res <- r // ctx ended too: undo owns it
	case <-ctx.Done():
	}
	Settle(ctx, ep, log, func(ectx context.Context) error {
		r := <-res // op ends with the epoch at the latest
		if ep.Err() != nil {
			return nil // what op made went with the session
		}
		return undo(ectx, r.v, r.err)
	})
	var zero T
	return zero, true, CtxErr(ctx)
}

// RetryUntilDone calls f under ep's context, backing off up to 1 s, until
// f returns nil or the epoch ends; it logs each failure as what.
func RetryUntilDone(ep *conn.Epoch, log *zap.Logger, what string, f func(context.Context) error) {
	ctx := connlink.Of(ep).Context()
	delay := 50 * time.Millisecond
	for {
		err := f(ctx)
		switch {
		case err == nil:
			log.Info(what + ": done")
			return
		case ep.Err() != nil:
			return
		}
		log.Warn(what+": failed; retrying", zap.Error(err), zap.Duration("in", delay))
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, time.Second)
	}
}

// Unresolved runs resolve in the background until it succeeds or ep ends,
// and returns err behind lock.ErrCreatePending.
func Unresolved(ep *conn.Epoch, log *zap.Logger, err error, resolve func(context.Context) error) error {
	go RetryUntilDone(ep, log, "deleting the node of a create whose answer was lost", resolve)
	return fmt.Errorf("%w: %w", lock.ErrCreatePending, err)
}

// CtxErr is ctx's error, and its cause too when one was given.
func CtxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// WaitEpochEnd follows zk.EventNotWatching: ep's error once it ends,
// CtxErr(ctx) if ctx ends first, nil if ep lives on past its timeout.
func WaitEpochEnd(ctx context.Context, ep *conn.Epoch) error {
	t := time.NewTimer(connlink.Of(ep).Timeout())
	defer t.Stop()
	select {
	case <-ep.Done():
		return ep.Err()
	case <-ctx.Done():
		return CtxErr(ctx)
	case <-t.C:
		return nil
	}
}

// Unwatch is connlink.Epoch.Unwatch without waiting for the removal.
func Unwatch(ep *conn.Epoch, ch <-chan zk.Event) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // send, do not wait
	_ = connlink.Of(ep).Unwatch(ctx, ch)
}
