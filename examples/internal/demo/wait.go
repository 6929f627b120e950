package demo

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// WatchRequests counts the watches the server has confirmed to s: a
// contender that finds the lock taken sets a watch before it waits, so one
// more means it queued (counted on the answer, so the watch is in place).
func WatchRequests(s *conn.Session) int64 { return connlink.Of(s).Stats().WatchesSet }

// WaitFor polls cond every 5 ms until it holds, ctx ends or timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
