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

// Meter starts the clock on one Acquire or TryAcquire of recipe on path and
// returns what the call runs when it returns: it reports the wait, with
// the outcome granted and err make of it, to sess's Metrics (nothing
// without one). The recipes' one place that times and classifies a wait;
// each call is metered once, by the outermost layer (see Config.Unmetered).
func Meter(sess *conn.Session, recipe, path string) (done func(granted bool, err error)) {
	m := Metrics(sess)
	if m == nil {
		return func(bool, error) {}
	}
	start := time.Now()
	return func(granted bool, err error) {
		m.Lock(conn.LockMetric{Event: conn.LockWait, Recipe: recipe, Path: path, Outcome: outcome(granted, err), Duration: time.Since(start)})
	}
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
