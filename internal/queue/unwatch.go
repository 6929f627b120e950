package queue

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// Unwatch tells ep that its caller stopped waiting on ch, a channel of
// ep's GetW, ExistsW or ChildrenW, on a path where giving up. Unless
// another watcher of the session still waits on that path and kind, or
// the watch fired, conn removes the server's watch (one removeWatches
// request): nothing of ours is left on the server after a waiter gives
// up. It does not wait for the answer: the removal is written before the
// epoch's next request (the delete of the waiter's node, which the caller
// waits for), so it is done when that is.
func Unwatch(ep *conn.Epoch, ch <-chan zk.Event) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // send, do not wait
	_ = connlink.Of(ep).Unwatch(ctx, ch)
}
