package queue

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// Unwatch tells ep that its caller stopped waiting on ch
// (connlink.Epoch.Unwatch), without waiting for the removal.
func Unwatch(ep *conn.Epoch, ch <-chan zk.Event) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // send, do not wait
	_ = connlink.Of(ep).Unwatch(ctx, ch)
}
