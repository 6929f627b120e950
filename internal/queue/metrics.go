package queue

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// Metrics returns the conn.Metrics of sess (conn.WithMetrics), nil without
// one.
func Metrics(sess *conn.Session) conn.Metrics {
	return connlink.Of(sess).Metrics()
}

// unmeteredKey marks a context whose acquire's wait its caller reports
// (package cohort: one report per Acquire, a local wait included).
type unmeteredKey struct{}

// Unmetered returns ctx marked so that AcquireGrant does not report its
// wait: the caller reports it (WaitDone).
func Unmetered(ctx context.Context) context.Context {
	return context.WithValue(ctx, unmeteredKey{}, true)
}

// WaitStart returns the start of an acquire's wait for WaitDone: the zero
// time when nothing is reported (no Metrics, or ctx Unmetered).
func WaitStart(ctx context.Context, m conn.Metrics) time.Time {
	if m == nil || ctx.Value(unmeteredKey{}) != nil {
		return time.Time{}
	}
	return time.Now()
}

// WaitDone reports the wait of an acquire that began at start (WaitStart;
// nothing if zero) and ended with granted or err. The engine's one place
// that classifies a wait's outcome.
func WaitDone(m conn.Metrics, recipe, path string, start time.Time, granted bool, err error) {
	if start.IsZero() {
		return
	}
	m.Lock(conn.LockMetric{Event: conn.LockWait, Recipe: recipe, Path: path, Outcome: outcome(granted, err), Duration: time.Since(start)})
}

func outcome(granted bool, err error) string {
	switch {
	case err == nil && granted:
		return conn.OutcomeGranted
	case err == nil:
		return conn.OutcomeNotGranted
	case errors.Is(err, context.DeadlineExceeded):
		return conn.OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return conn.OutcomeCancelled
	}
	return conn.OutcomeError
}
