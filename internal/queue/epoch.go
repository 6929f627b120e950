package queue

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// WaitEpochEnd follows a watch's "not watching" event (zk.EventNotWatching):
// go-zookeeper drops the watches when its session expired or it is
// closing, so ep ends very soon. It returns ep's error once ep ends,
// CtxErr(ctx) if ctx ends first, and nil if ep still lives after its
// session timeout: the caller then sets its watches again.
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
