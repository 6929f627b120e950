package exclusive

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Release gives the lock up, from any goroutine, deleting the lock node if
// it is still ours. lock.ErrNotHeld when the handle holds nothing;
// lock.ErrReleasePending when the delete is unconfirmed (it counts as
// released); any other error leaves it held.
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	g := l.held
	l.held = nil
	l.mu.Unlock()
	if g == nil {
		return fmt.Errorf("exclusive: release %s: %w", l.path, lock.ErrNotHeld)
	}
	if g.ep.Err() != nil {
		connlink.Of(g.lease).Released()
		l.log.Debug("released; the node went with its session", zap.Error(g.ep.Err()))
		return nil
	}
	connlink.Of(g.lease).Releasing(true)
	gone, err := l.deleteOurs(ctx, g.ep, g.id, g.czxid)
	switch {
	case err == nil:
		if gone {
			connlink.Of(g.lease).Gone() // deleted by someone else: a loss, not a hold
		}
		connlink.Of(g.lease).Released()
		l.log.Debug("released")
		return nil
	case g.ep.Err() != nil:
		connlink.Of(g.lease).Released()
		return nil // the epoch ended: the node is gone with it
	case ctx.Err() != nil || errors.Is(err, conn.ErrConnectionLoss):
		connlink.Of(g.lease).Released()
		go l.deleteInBackground(g)
		return fmt.Errorf("exclusive: release %s: %w: %w", l.path, lock.ErrReleasePending, err)
	}
	connlink.Of(g.lease).Releasing(false)
	l.mu.Lock()
	l.held = g // still ours: nobody else could have taken it meanwhile
	l.mu.Unlock()
	return fmt.Errorf("exclusive: release %s: %w", l.path, err)
}

// deleteOnce sends one delete of the lock node, which a read found ours at
// version, never retried: behind a set-data of the node in one
// transaction, which the server refuses on another session's sealed node
// (every holder's node has version 0, so a version check alone would not
// tell). After an error, read the node again (deleteIfOurs).
func (l *Lock) deleteOnce(ctx context.Context, ep *conn.Epoch, data []byte, version int32) error {
	_, err := connlink.Of(ep).Multi(ctx,
		&zk.SetDataRequest{Path: l.node, Data: data, Version: version},
		&zk.DeleteRequest{Path: l.node, Version: version + 1})
	return err
}

// deleteInBackground retries the deletion of g's node until it is gone or
// g's epoch ends; run it on its own goroutine.
func (l *Lock) deleteInBackground(g *grant) {
	bg.RetryUntilDone(g.ep, l.log, "deleting the lock node after an unconfirmed release", func(ctx context.Context) error {
		return l.deleteIfOurs(ctx, g.ep, g.id, g.czxid)
	})
}
