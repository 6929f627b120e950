package bg

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

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

// Unwatch tells ep that its caller stopped waiting on ch
// (connlink.Epoch.Unwatch), without waiting for the removal.
func Unwatch(ep *conn.Epoch, ch <-chan zk.Event) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // send, do not wait
	_ = connlink.Of(ep).Unwatch(ctx, ch)
}
