package queue

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// Unwatch tells ep that its caller stopped waiting on ch (a channel of
// GetW, ExistsW or ChildrenW): conn removes the server's watch unless
// another watcher still waits on it. It sends without waiting: the removal
// is written before the epoch's next request.
func Unwatch(ep *conn.Epoch, ch <-chan zk.Event) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // send, do not wait
	_ = connlink.Of(ep).Unwatch(ctx, ch)
}
