package exclusive

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/internal/report"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// nodeName is the one node every contender tries to create.
const nodeName = "lock"

// Lock is the naive exclusive lock: whoever creates <path>/lock holds it,
// and on its deletion every waiter races to create it again: never two
// holders, but unfair and herd-prone. Owned by the handle like sync.Mutex
// (not reentrant; any goroutine may Release). Holding it is a lease on the
// session, not a promise: watch Lease.Lost and fence writes. Safe for
// concurrent use.
type Lock struct {
	lockLink // the session, for multilock

	sess *conn.Session
	path string // the lock path, as given to New
	node string // path + "/lock"
	log  *zap.Logger

	mu   sync.Mutex // guards held
	held *grant     // what this handle holds; nil when nothing
}

// lockLink is embedded unexported: it adds nothing to the lock's API.
type lockLink = connlink.Link[*conn.Session]

// grant is one successful Acquire.
type grant struct {
	ep    *conn.Epoch
	lease *conn.Lease
	id    string // the unique id in the node's data
	czxid int64  // the node's: ours even if its data was overwritten
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
		node:     zkpath.Join(path, nodeName),
		log:      connlink.Of(sess).Logger().With(zap.String("lock", path)),
	}, nil
}

// Path is the lock path given to New. The lock node is Path()+"/lock".
func (l *Lock) Path() string { return l.path }

// Acquire blocks until this handle holds the lock or ctx ends; then the
// error matches ctx.Err() and no node is left behind (a grant as ctx ends
// is undone). A session lost while waiting is not an error.
func (l *Lock) Acquire(ctx context.Context) (*conn.Lease, error) {
	if _, err := locknode.Label(ctx); err != nil {
		return nil, fmt.Errorf("exclusive: acquire %s: %w", l.path, err)
	}
	done := report.Meter(l.sess, "exclusive", l.path)
	lease, err := l.acquire(ctx)
	done(lease != nil, err)
	return lease, err
}

func (l *Lock) acquire(ctx context.Context) (*conn.Lease, error) {
	id := newID()
	label, _ := locknode.Label(ctx) // checked by Acquire
	data := nodeData(id, label)
	for {
		if ctx.Err() != nil {
			return nil, l.ctxErr("acquire", ctx)
		}
		ep, err := connlink.Of(l.sess).Epoch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, l.ctxErr("acquire", ctx)
			}
			return nil, fmt.Errorf("exclusive: acquire %s: %w", l.path, err)
		}
		out, err := l.create(ctx, ep, data, id)
		switch out {
		case epochEnded:
			continue
		case failed:
			return nil, l.wrap("acquire", ctx, err)
		}
		// created: read our node, for its czxid (how our lease and our
		// release tell it from a node created at the same path after ours
		// was deleted). taken: watch the node, unless it is ours after all
		// (a create whose first answer was lost had made it).
		var (
			got []byte
			st  *zk.Stat
			ch  <-chan zk.Event
		)
		if out == created {
			got, st, err = connlink.Of(ep).Get(ctx, l.node)
		} else {
			got, st, ch, err = connlink.Of(ep).GetW(ctx, l.node)
		}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // released (or ours deleted by someone else) in between: race again
		case err != nil && ep.Err() != nil:
			continue
		case err != nil:
			// A create retried after a lost answer reports NodeExists for
			// its own node, so "taken" may be ours too.
			l.settle(ctx, ep, id)
			return nil, l.wrap("acquire", ctx, pending(out, err))
		case ours(ep, got, st, id, 0):
			return l.grant(ctx, ep, id, st)
		case ch == nil:
			continue // ours was deleted and someone created the node again: watch it
		}
		l.log.Debug("lock taken; waiting for its deletion", logfield.Session("holder_session", st.EphemeralOwner))
		select {
		case <-ch: // deleted or changed, or the watch was dropped: look again
		case <-ep.Done():
		case <-ctx.Done():
			bg.Unwatch(ep, ch) // no watch of ours is left on the server
			return nil, l.ctxErr("acquire", ctx)
		}
	}
}

// TryAcquire makes one attempt. It returns the lease and true if this
// handle now holds the lock; nil, false and a nil error if someone else
// (or this very handle) holds it. Errors as for Acquire.
func (l *Lock) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	if _, err := locknode.Label(ctx); err != nil {
		return nil, false, fmt.Errorf("exclusive: try acquire %s: %w", l.path, err)
	}
	done := report.Meter(l.sess, "exclusive", l.path)
	lease, ok, err := l.tryAcquire(ctx)
	done(ok, err)
	return lease, ok, err
}

func (l *Lock) tryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	id := newID()
	for {
		if ctx.Err() != nil {
			return nil, false, l.ctxErr("try acquire", ctx)
		}
		ep, err := connlink.Of(l.sess).Epoch(ctx)
		if err != nil {
			return nil, false, l.wrap("try acquire", ctx, err)
		}
		label, _ := locknode.Label(ctx) // checked by TryAcquire
		out, err := l.create(ctx, ep, nodeData(id, label), id)
		switch out {
		case epochEnded:
			continue // no session right now; one attempt in the next
		case failed:
			return nil, false, l.wrap("try acquire", ctx, err)
		}
		// Read the node: ours (created, or a create whose first answer was
		// lost had made it) is granted with its czxid (see Acquire).
		got, st, err := connlink.Of(ep).Get(ctx, l.node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil, false, nil // it was held when we tried, or ours was deleted
		case err != nil && ep.Err() != nil:
			return nil, false, nil // our node, if any, went with the session
		case err != nil:
			l.settle(ctx, ep, id)
			return nil, false, l.wrap("try acquire", ctx, pending(out, err))
		case ours(ep, got, st, id, 0):
			lease, err := l.grant(ctx, ep, id, st)
			return lease, err == nil, err
		}
		return nil, false, nil
	}
}

// grant records the lock node, read as st and found ours, as held, unless
// ctx ended meanwhile (then it is deleted again). The lease knows the
// node's czxid: a node created at the path after ours is not its node.
func (l *Lock) grant(ctx context.Context, ep *conn.Epoch, id string, st *zk.Stat) (*conn.Lease, error) {
	if ctx.Err() != nil {
		l.log.Debug("granted as ctx ended; undoing the grant")
		l.settle(ctx, ep, id)
		return nil, l.ctxErr("acquire", ctx)
	}
	g := &grant{ep: ep, lease: connlink.Of(ep).NewLease(l.node, st.Czxid), id: id, czxid: st.Czxid}
	connlink.Of(g.lease).Label("exclusive", l.path)
	l.mu.Lock()
	stale := l.held
	l.held = g
	l.mu.Unlock()
	if stale != nil {
		// Only when the old grant's node is gone (its epoch ended, or
		// someone deleted it): we just found the node ours.
		l.log.Warn("replacing a grant that was never released; its node was gone",
			logfield.Session("old_session", stale.ep.SessionID()))
		connlink.Of(stale.lease).Released()
	}
	l.log.Debug("acquired", logfield.Session("session", ep.SessionID()))
	return g.lease, nil
}

// ours reports whether the node read as data and st is the one the Acquire
// call with id created in ep: by its id, or by its czxid when known (a
// write by its own session may have replaced the id).
func ours(ep *conn.Epoch, data []byte, st *zk.Stat, id string, czxid int64) bool {
	return st.EphemeralOwner == ep.SessionID() && (hasID(data, id) || czxid != 0 && st.Czxid == czxid)
}

func (l *Lock) ctxErr(op string, ctx context.Context) error {
	return fmt.Errorf("exclusive: %s %s: %w", op, l.path, ctx.Err())
}

// wrap makes the error of a failed acquire; when ctx has ended, the error
// matches ctx.Err() whatever the operation reported.
func (l *Lock) wrap(op string, ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("exclusive: %s %s: %w (%w)", op, l.path, ctx.Err(), err)
	}
	return fmt.Errorf("exclusive: %s %s: %w", op, l.path, err)
}

// settle deletes the lock node if the Acquire call with id created it in
// ep, under the epoch (bg.Settle, undo).
func (l *Lock) settle(ctx context.Context, ep *conn.Epoch, id string) {
	bg.Settle(ctx, ep, l.log, func(c context.Context) error { return l.undo(c, ep, id) })
}

// undo deletes the lock node if the Acquire call with id created it in ep;
// if that cannot be learnt now, it goes on in the background until done or
// the epoch ends: a node of ours never holds the lock for the session.
func (l *Lock) undo(ctx context.Context, ep *conn.Epoch, id string) error {
	err := l.deleteIfOurs(ctx, ep, id, 0)
	if err != nil && ep.Err() == nil {
		l.log.Info("the lock node's owner is unknown; deleting it if ours in the background", zap.Error(err))
		bg.Unresolved(ep, l.log, err, func(c context.Context) error { return l.deleteIfOurs(c, ep, id, 0) })
		return nil
	}
	return err
}

// pending marks err, a failed read of a node that may be ours (out
// unknown), as resolved in the background (settle).
func pending(out outcome, err error) error {
	if out == unknown {
		return fmt.Errorf("%w: %w", lock.ErrCreatePending, err)
	}
	return err
}
