package exclusive

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connhook"
)

// settleWait bounds how long Acquire, after its ctx ended, waits for the
// removal of a node it may have created before it returns and lets the
// removal finish in the background (bounded by the epoch). In normal
// operation the removal takes one or two round trips.
const settleWait = 250 * time.Millisecond

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

// create makes one attempt to create the lock node in ep. The request runs
// detached from ctx, so that its fate is always learnt: if ctx ends first,
// create returns ctx's error at once and, when the answer comes, deletes the
// node if this attempt made it (waiting up to settleWait for that).
func (l *Lock) create(ctx context.Context, ep *conn.Epoch, data []byte, id string) (outcome, error) {
	res := make(chan error, 1) // buffered: the answer may come after we stopped waiting
	go func() { res <- l.createNode(context.WithoutCancel(ctx), ep, data) }()
	select {
	case err := <-res:
		return classify(ep, err), err
	case <-ctx.Done():
	}
	l.settle(ep, func(c context.Context) error {
		var err error
		select {
		case err = <-res:
		case <-c.Done():
			return nil // the epoch ended: the node, if any, went with it
		}
		switch classify(ep, err) {
		case created, taken, unknown:
			return l.deleteIfOurs(c, ep, id)
		}
		return nil
	})
	return failed, ctx.Err()
}

// createNode creates the ephemeral lock node, and the lock path's missing
// ancestors as containers when the server says they are missing. A
// container can be reaped between the two steps, hence the few rounds.
func (l *Lock) createNode(ctx context.Context, ep *conn.Epoch, data []byte) error {
	for i := 0; ; i++ {
		_, err := ep.Create(ctx, l.node, data, zk.FlagEphemeral, connhook.SealedACL(l.sess))
		if !errors.Is(err, zk.ErrNoNode) || i == 3 {
			return err
		}
		if err := ep.CreateParents(ctx, l.node); err != nil {
			return err
		}
	}
}

// deleteIfOurs deletes the lock node if the Acquire call with id created
// it in ep. ZooKeeper answers a session's requests in order, so called after
// the create has answered (or failed), it sees the create's effect. The
// read-then-delete is safe on the shared path: while our node exists no one
// else can create the lock node, and only we delete ours (one delete at a
// time, each read again after a lost answer).
func (l *Lock) deleteIfOurs(ctx context.Context, ep *conn.Epoch, id string) error {
	for i := 0; ; i++ {
		data, st, err := ep.Get(ctx, l.node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case err != nil:
			return err
		case !ours(ep, data, st, id):
			return nil
		}
		err = l.deleteOnce(ctx, ep, st.Version)
		switch {
		case err == nil:
			l.log.Debug("deleted our lock node")
			return nil
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, conn.ErrConnectionLoss) && ep.Err() == nil && ctx.Err() == nil:
			continue // the delete's fate is unknown: read the node again
		case !errors.Is(err, zk.ErrBadVersion) || i == 3:
			return err
		}
		// Someone changed our node's data in between; read it again.
	}
}

// settle runs f, which removes what an abandoned attempt may have left,
// under the epoch's context. It waits up to settleWait for f, then lets f
// finish in the background; f ends at the latest when the epoch ends.
func (l *Lock) settle(ep *conn.Epoch, f func(context.Context) error) {
	done := make(chan struct{}) // closed by the goroutine below when f returns
	go func() {
		defer close(done)
		if err := f(ep.Context()); err != nil && ep.Err() == nil {
			l.log.Warn("removing the node of an abandoned acquire failed", zap.Error(err))
		}
	}()
	t := time.NewTimer(settleWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		l.log.Debug("removal of an abandoned node goes on in the background")
	}
}
