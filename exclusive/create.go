package exclusive

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
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
// ctx (bg.Detach): if ctx ends first, the node, if this attempt made
// it, is deleted in the background (undo).
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
// of the Acquire call that created it in ep (or czxid, when not 0),
// reading it again after each failed delete.
func (l *Lock) deleteIfOurs(ctx context.Context, ep *conn.Epoch, id string, czxid int64) error {
	_, err := l.deleteOurs(ctx, ep, id, czxid)
	return err
}

// deleteOurs is deleteIfOurs; gone reports that our node was found gone
// (or replaced) before any delete of ours could have been applied:
// deleted by someone else.
func (l *Lock) deleteOurs(ctx context.Context, ep *conn.Epoch, id string, czxid int64) (gone bool, err error) {
	unsure := false // a delete of ours was sent and its answer lost
	for i := 0; ; i++ {
		data, st, err := connlink.Of(ep).Get(ctx, l.node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return !unsure, nil
		case err != nil:
			return false, err
		case !ours(ep, data, st, id, czxid):
			return !unsure, nil
		}
		err = l.deleteOnce(ctx, ep, data, st.Version)
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
