package queue

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// WaitEpochEnd follows zk.EventNotWatching, after which ep ends very soon:
// ep's error once it ends, CtxErr(ctx) if ctx ends first, nil if ep still
// lives after its session timeout (then set the watches again).
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
