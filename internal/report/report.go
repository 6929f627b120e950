// Package report is how the recipes report to conn.WithMetrics's hooks.
package report

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// Lock and Leader call sess's hook, if set.
func Lock(sess *conn.Session, l metrics.Lock) {
	if f := connlink.Of(sess).Metrics().Lock; f != nil {
		f(l)
	}
}

func Leader(sess *conn.Session, l metrics.Leader) {
	if f := connlink.Of(sess).Metrics().Leader; f != nil {
		f(l)
	}
}

// Meter starts the clock on one Acquire or TryAcquire of recipe on path;
// done reports the wait. Each call is metered once, by its outermost layer.
func Meter(sess *conn.Session, recipe, path string) (done func(granted bool, err error)) {
	f := connlink.Of(sess).Metrics().Lock
	if f == nil {
		return func(bool, error) {}
	}
	start := time.Now()
	return func(granted bool, err error) {
		f(metrics.Lock{Event: metrics.LockWait, Recipe: recipe, Path: path, Outcome: outcome(granted, err), Duration: time.Since(start)})
	}
}

func outcome(granted bool, err error) string {
	switch {
	case err == nil && granted:
		return metrics.OutcomeGranted
	case err == nil:
		return metrics.OutcomeNotGranted
	case errors.Is(err, context.DeadlineExceeded):
		return metrics.OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return metrics.OutcomeCancelled
	}
	return metrics.OutcomeError
}
