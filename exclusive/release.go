package exclusive

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Release gives the lock up: the lease is marked released (its Lost channel
// closes) and the lock node is deleted if it is still ours (see
// deleteIfOurs): a node someone else created at the lock path after ours
// was deleted is left alone, and Release returns nil as for a node that is
// gone.
// Any goroutine may call it. Release on a handle that holds nothing returns
// lock.ErrNotHeld. If the session epoch the lock was taken in has ended, the node
// went with it and Release returns nil.
//
// If the delete's fate cannot be learnt (ctx ended or the connection
// dropped with it in flight), Release returns an error matching
// lock.ErrReleasePending and keeps deleting in the background until the node is
// gone or the epoch ends; the handle holds nothing. Any other error (the
// server refused the delete, e.g. for lack of permission) leaves the lock
// held, lease and all: call Release again.
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
	gone, err := l.deleteOurs(ctx, g.ep, g.id)
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
// version, never retried. The lock path is shared, and every holder's node
// has version 0: a delete with a version check alone would delete the next
// holder's node as well as ours, if ours was deleted in between (by a
// retried delete whose first one had worked, or by a third party) and the
// node created again. So the delete goes in one transaction behind a
// set-data of the node (to the data read, the version read): every node of
// the lock is sealed, so the server refuses the set-data, and the delete
// with it, on a node of another session (zk.ErrNoAuth). Whoever sees an
// error must read the node again before trying again (deleteIfOurs).
func (l *Lock) deleteOnce(ctx context.Context, ep *conn.Epoch, data []byte, version int32) error {
	_, err := ep.Multi(ctx,
		&zk.SetDataRequest{Path: l.node, Data: data, Version: version},
		&zk.DeleteRequest{Path: l.node, Version: version + 1})
	return err
}

// deleteInBackground retries the deletion of g's node until it is gone or
// g's epoch ends (then the node is gone with it): queue.RetryUntilDone. It
// runs on its own goroutine, which ends with the epoch at the latest.
func (l *Lock) deleteInBackground(g *grant) {
	queue.RetryUntilDone(g.ep, l.log, "deleting the lock node after an unconfirmed release", func(ctx context.Context) error {
		return l.deleteIfOurs(ctx, g.ep, g.id)
	})
}
