package exclusive

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/internal/report"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"go.uber.org/zap"
)

// Lock is the naive exclusive lock: whoever creates <path>/lock holds it,
// and on its deletion every waiter races to create it again. Owned by the
// handle like sync.Mutex (not reentrant; any goroutine may Release). Safe
// for concurrent use.
type Lock struct {
	lockLink // the session, for multilock

	sess *conn.Session
	path string // as given to New
	node string // the one node every contender tries to create
	log  *zap.Logger

	mu   sync.Mutex // guards held
	held *grant     // what this handle holds; nil when nothing
}

// lockLink is embedded unexported: it adds nothing to the lock's API.
type lockLink = connlink.Link[*conn.Session]

// grant is one successful Acquire; id is the unique id in the node's data.
type grant struct {
	ep    *conn.Epoch
	lease *conn.Lease
	id    string
	czxid int64 // the node's: ours even if its data was overwritten
}

// New returns a handle on the exclusive lock at path. Nothing is sent
// until the first acquire, which creates the path as container nodes.
func New(sess *conn.Session, path string) (*Lock, error) {
	if sess == nil {
		return nil, fmt.Errorf("exclusive: new %s: nil session: %w", path, conn.ErrInvalidArgument)
	}
	if err := zkpath.Validate(path); err != nil {
		return nil, fmt.Errorf("exclusive: new %s: %w", path, err)
	}
	return &Lock{
		lockLink: connlink.NewLink(sess),
		sess:     sess,
		path:     path,
		node:     zkpath.Join(path, "lock"),
		log:      connlink.Of(sess).Logger().With(zap.String("lock", path)),
	}, nil
}

// Path is the lock path given to New. The lock node is Path()+"/lock".
func (l *Lock) Path() string { return l.path }

// Acquire blocks until this handle holds the lock or ctx ends; then no
// node is left behind. A session lost while waiting is not an error.
func (l *Lock) Acquire(ctx context.Context) (*conn.Lease, error) {
	return l.metered(ctx, "acquire", true)
}

// TryAcquire makes one attempt: nil, false and a nil error if someone else
// (or this very handle) holds the lock. Errors as for Acquire.
func (l *Lock) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	lease, err := l.metered(ctx, "try acquire", false)
	return lease, lease != nil, err
}

// metered is acquire reported as one wait to the session's Lock hook.
func (l *Lock) metered(ctx context.Context, op string, wait bool) (*conn.Lease, error) {
	label, err := locknode.Label(ctx)
	if err != nil {
		return nil, fmt.Errorf("exclusive: %s %s: %w", op, l.path, err)
	}
	done := report.Meter(l.sess, "exclusive", l.path)
	lease, err := l.acquire(ctx, op, wait, label)
	done(lease != nil, err)
	return lease, err
}

// acquire creates the node until granted or, with wait false, found held.
func (l *Lock) acquire(ctx context.Context, op string, wait bool, label string) (*conn.Lease, error) {
	id := locknode.NewID()
	data := locknode.EncodeData(id, "", true, label)
	for {
		if ctx.Err() != nil {
			return nil, l.wrap(op, ctx, ctx.Err())
		}
		ep, err := connlink.Of(l.sess).Epoch(ctx)
		if err != nil {
			return nil, l.wrap(op, ctx, err)
		}
		out, err := l.create(ctx, ep, data, id)
		switch out {
		case epochEnded:
			continue
		case failed:
			return nil, l.wrap(op, ctx, err)
		}
		// Read the node: ours (created, or made by a create whose answer
		// was lost) is granted with its czxid; else watch it.
		var (
			got []byte
			st  *zk.Stat
			ch  <-chan zk.Event
		)
		if out == created || !wait {
			got, st, err = connlink.Of(ep).Get(ctx, l.node)
		} else {
			got, st, ch, err = connlink.Of(ep).GetW(ctx, l.node)
		}
		switch {
		case err != nil && !wait && (ep.Err() != nil || errors.Is(err, zk.ErrNoNode)):
			return nil, nil // held when we tried, or ours went
		case errors.Is(err, zk.ErrNoNode), err != nil && ep.Err() != nil:
			continue // released (or ours deleted, or gone with its session) in between: race again
		case err != nil:
			// A create retried after a lost answer reports NodeExists for
			// its own node, so "taken" may be ours too.
			l.settle(ctx, ep, id)
			if out == unknown { // the node may be ours: settled in the background
				err = fmt.Errorf("%w: %w", lock.ErrCreatePending, err)
			}
			return nil, l.wrap(op, ctx, err)
		case ours(ep, got, st, id, 0):
			return l.grant(ctx, ep, id, st)
		case !wait:
			return nil, nil
		case ch == nil:
			continue // ours was deleted and someone created the node again: watch it
		}
		l.log.Debug("lock taken; waiting for its deletion", logfield.Session("holder_session", st.EphemeralOwner))
		select {
		case <-ch: // deleted or changed, or the watch was dropped: look again
		case <-ep.Done():
		case <-ctx.Done():
			bg.Unwatch(ep, ch) // no watch of ours is left on the server
			return nil, l.wrap(op, ctx, ctx.Err())
		}
	}
}

// grant records the lock node, read as st and found ours, as held, unless
// ctx ended meanwhile (then it is deleted again).
func (l *Lock) grant(ctx context.Context, ep *conn.Epoch, id string, st *zk.Stat) (*conn.Lease, error) {
	if ctx.Err() != nil {
		l.log.Debug("granted as ctx ended; undoing the grant")
		l.settle(ctx, ep, id)
		return nil, l.wrap("acquire", ctx, ctx.Err())
	}
	g := &grant{ep: ep, lease: connlink.Of(ep).NewLease(l.node, st.Czxid), id: id, czxid: st.Czxid}
	connlink.Of(g.lease).Label("exclusive", l.path)
	l.mu.Lock()
	stale := l.held
	l.held = g
	l.mu.Unlock()
	if stale != nil {
		// Its node is gone (epoch ended, or deleted): we just found the node ours.
		l.log.Warn("replacing a grant that was never released; its node was gone",
			logfield.Session("old_session", stale.ep.SessionID()))
		connlink.Of(stale.lease).Released()
	}
	l.log.Debug("acquired", logfield.Session("session", ep.SessionID()))
	return g.lease, nil
}

// ours: the node read as data and st is the one Acquire call id created in
// ep, known by id or (if not 0) by czxid, which a write cannot change.
func ours(ep *conn.Epoch, data []byte, st *zk.Stat, id string, czxid int64) bool {
	d, _ := locknode.DecodeData(data)
	return st.EphemeralOwner == ep.SessionID() && (d.ID == id || czxid != 0 && st.Czxid == czxid)
}

// wrap makes the error of a failed acquire; when ctx has ended, the error
// matches ctx.Err() whatever the operation reported.
func (l *Lock) wrap(op string, ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("exclusive: %s %s: %w (%w)", op, l.path, ctx.Err(), err)
	}
	return fmt.Errorf("exclusive: %s %s: %w", op, l.path, err)
}

// settle is undo under the epoch (bg.Settle).
func (l *Lock) settle(ctx context.Context, ep *conn.Epoch, id string) {
	bg.Settle(ctx, ep, l.log, func(c context.Context) error { return l.undo(c, ep, id) })
}

// undo deletes the lock node if the Acquire call with id created it in ep,
// in the background if that cannot be learnt now.
func (l *Lock) undo(ctx context.Context, ep *conn.Epoch, id string) error {
	err := l.deleteIfOurs(ctx, ep, id, 0)
	if err != nil && ep.Err() == nil {
		l.log.Info("the lock node's owner is unknown; deleting it if ours in the background", zap.Error(err))
		bg.Unresolved(ep, l.log, err, func(c context.Context) error { return l.deleteIfOurs(c, ep, id, 0) })
		return nil
	}
	return err
}

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

// create makes one attempt to create the lock node (and the lock path's
// missing ancestors, as containers) in ep, detached from ctx (bg.Detach):
// if ctx ends first, the node, if made, is undone.
func (l *Lock) create(ctx context.Context, ep *conn.Epoch, data []byte, id string) (outcome, error) {
	_, detached, err := bg.Detach(ctx, ep, l.log,
		func(_, ectx context.Context) (struct{}, error) {
			for i := 0; ; i++ { // the containers may be reaped in between: a few rounds
				_, err := connlink.Of(ep).Create(ectx, l.node, data, zk.FlagEphemeral, connlink.Of(l.sess).SealedACL())
				if !errors.Is(err, zk.ErrNoNode) || i == 3 {
					return struct{}{}, err
				}
				if err := connlink.Of(ep).CreateParents(ectx, l.node); err != nil {
					return struct{}{}, err
				}
			}
		},
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

// deleteIfOurs deletes the lock node if it carries our session and id (or
// czxid, when not 0), reading it again after each failed delete.
func (l *Lock) deleteIfOurs(ctx context.Context, ep *conn.Epoch, id string, czxid int64) error {
	_, err := l.deleteOurs(ctx, ep, id, czxid)
	return err
}

// deleteOurs is deleteIfOurs; gone: our node was found gone (or replaced)
// before any delete of ours could have been applied.
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

// Release gives the lock up, from any goroutine: lock.ErrNotHeld when the
// handle holds nothing; lock.ErrReleasePending counts as released; any
// other error leaves it held.
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
		go bg.RetryUntilDone(g.ep, l.log, "deleting the lock node after an unconfirmed release", func(ctx context.Context) error {
			return l.deleteIfOurs(ctx, g.ep, g.id, g.czxid)
		})
		return fmt.Errorf("exclusive: release %s: %w: %w", l.path, lock.ErrReleasePending, err)
	}
	connlink.Of(g.lease).Releasing(false)
	l.mu.Lock()
	l.held = g // still ours: nobody else could have taken it meanwhile
	l.mu.Unlock()
	return fmt.Errorf("exclusive: release %s: %w", l.path, err)
}
