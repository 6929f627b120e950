package exclusive

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"go.uber.org/zap"
)

// outcome is what one create of the lock node came to.
type outcome int

const (
	created    outcome = iota // we made the node: we hold the lock
	taken                     // the node exists; ours only if an earlier answer was lost
	unknown                   // the answer was lost; the node may be ours
	epochEnded                // the epoch ended; nothing of ours outlives it
	failed                    // the error says why; nothing of ours is left (or is being removed)
)

func classify(ep *conn.Epoch, err error) outcome {
	switch {
	case ep.Err() != nil || errors.Is(err, conn.ErrEpochEnded):
		return epochEnded
	case err == nil:
		return created
	case errors.Is(err, zk.ErrNodeExists):
		return taken
	case errors.Is(err, conn.ErrConnectionLoss):
		return unknown
	}
	return failed
}

// create makes one attempt to create the lock node in ep, detached from
// ctx (bg.Detach): if ctx ends first, the node, if this attempt made it,
// is deleted in the background (undo).
func (l *Lock) create(ctx context.Context, ep *conn.Epoch, data []byte, id string) (outcome, error) {
	_, detached, err := bg.Detach(ctx, ep, l.log,
		func(_, ectx context.Context) (struct{}, error) { return struct{}{}, l.createNode(ectx, ep, data) },
		func(ectx context.Context, _ struct{}, err error) error {
			switch classify(ep, err) {
			case created, taken, unknown:
				return l.undo(ectx, ep, id)
			}
			return nil
		})
	if detached {
		return failed, err
	}
	return classify(ep, err), err
}

// createNode creates the ephemeral lock node, and the lock path's missing
// ancestors as containers when the server says they are missing. A
// container can be reaped between the two steps, hence the few rounds.
func (l *Lock) createNode(ctx context.Context, ep *conn.Epoch, data []byte) error {
	for i := 0; ; i++ {
		_, err := connlink.Of(ep).Create(ctx, l.node, data, zk.FlagEphemeral, connlink.Of(l.sess).SealedACL())
		if !errors.Is(err, zk.ErrNoNode) || i == 3 {
			return err
		}
		if err := connlink.Of(ep).CreateParents(ctx, l.node); err != nil {
			return err
		}
	}
}

// deleteIfOurs deletes the lock node if it carries our session and the id
// of the Acquire call that created it in ep, reading it again after each
// failed delete.
func (l *Lock) deleteIfOurs(ctx context.Context, ep *conn.Epoch, id string) error {
	_, err := l.deleteOurs(ctx, ep, id)
	return err
}

// deleteOurs is deleteIfOurs; gone: our node was found gone (or replaced)
// before any delete of ours could have been applied.
func (l *Lock) deleteOurs(ctx context.Context, ep *conn.Epoch, id string) (gone bool, err error) {
	unsure := false // a delete of ours was sent and its answer lost
	for i := 0; ; i++ {
		data, st, err := connlink.Of(ep).Get(ctx, l.node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return !unsure, nil
		case err != nil:
			return false, err
		case !ours(ep, data, st, id):
			return !unsure, nil
		}
		// One delete, never retried, behind a set-data in one transaction:
		// the server refuses it on another session's sealed node (every
		// holder's node has version 0, so a version alone would not tell).
		_, err = connlink.Of(ep).Multi(ctx,
			&zk.SetDataRequest{Path: l.node, Data: data, Version: st.Version},
			&zk.DeleteRequest{Path: l.node, Version: st.Version + 1})
		failed, refused := connlink.Of(l.sess).FailedOp(err)
		switch {
		case err == nil:
			l.log.Debug("deleted our lock node")
			return false, nil
		case errors.Is(err, zk.ErrNoNode):
			continue // ours is gone; is the node there now ours?
		case errors.Is(err, conn.ErrConnectionLoss) && ep.Err() == nil && ctx.Err() == nil:
			unsure = true
			continue // the delete's fate is unknown: read the node again
		case i == 3:
			return false, err
		case errors.Is(err, zk.ErrBadVersion), refused && failed == 0 && errors.Is(err, zk.ErrNoAuth):
			continue // the node changed, or is not ours (another session's): read it again
		}
		return false, err
	}
}

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
		go bg.RetryUntilDone(g.ep, l.log, "deleting the lock node after an unconfirmed release", func(ctx context.Context) error {
			return l.deleteIfOurs(ctx, g.ep, g.id)
		})
		return fmt.Errorf("exclusive: release %s: %w: %w", l.path, lock.ErrReleasePending, err)
	}
	connlink.Of(g.lease).Releasing(false)
	l.mu.Lock()
	l.held = g // still ours: nobody else could have taken it meanwhile
	l.mu.Unlock()
	return fmt.Errorf("exclusive: release %s: %w", l.path, err)
}
