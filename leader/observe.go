package leader

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/queue"
)

// Observe returns a channel of leader changes. It first receives the
// current leader, then a value each time the leader changes: the new
// leader, or the zero Participant (Node "") when nobody campaigns any more.
//
// Latest value wins: the channel holds one value, and a value the reader
// has not taken yet is replaced by a newer one. A slow reader may therefore
// skip intermediate leaders, but never misses that the leader changed:
// after any change, the next value it receives is the leader as of that
// change or later. Values are compared by node: a participant that resigns
// and campaigns again is a change.
//
// The channel is closed when ctx ends or the session is closed. Observing
// costs one child watch on the election path (or, while the path does not
// exist, one watch on its creation), set again after every change of the
// participants; when ctx ends, that watch is made to fire (one transaction
// that creates and deletes a child nobody can list) so that no watch is
// left on the server; a session without write access to the path keeps it
// until the participants next change.
func (e *Election) Observe(ctx context.Context) <-chan Participant {
	ch := make(chan Participant, 1)
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan Participant) {
	defer close(ch)
	var last *Participant
	for {
		ep, err := e.sess.Epoch(ctx)
		if err != nil {
			return // ctx ended or the session closed
		}
		if !e.observeEpoch(ctx, ep, ch, &last) {
			return
		}
	}
}

// observeEpoch observes within ep; false when observing is over.
func (e *Election) observeEpoch(ctx context.Context, ep *conn.Epoch, ch chan Participant, last **Participant) bool {
	delay := 50 * time.Millisecond
	for {
		cur, w, exists, err := e.leaderW(ctx, ep)
		if err != nil {
			// No watch is left behind by a failed leaderW.
			switch {
			case ctx.Err() != nil:
				return false
			case ep.Err() != nil:
				return true // watches went with the epoch
			}
			e.sess.Logger().Debug("leader: observe", zap.Error(err))
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return false
			case <-ep.Done():
				t.Stop()
				return true
			}
			delay = min(2*delay, ep.Timeout())
			continue
		}
		delay = 50 * time.Millisecond
		if *last == nil || (*last).Node != cur.Node {
			publish(ch, cur)
			*last = &cur
		}
		select {
		case <-w:
		case <-ep.Done():
			return true
		case <-ctx.Done():
			e.unwatch(ctx, ep, w, exists)
			return false
		}
	}
}

// publish puts p into ch, replacing a value not yet taken. Only the
// observing goroutine sends on ch, so the send after the drain never blocks.
func publish(ch chan Participant, p Participant) {
	select {
	case ch <- p:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	ch <- p
}

// leaderW reads the leader and leaves a watch that fires when the
// participants may have changed: a child watch on the path (exists true),
// or a watch on its creation.
func (e *Election) leaderW(ctx context.Context, ep *conn.Epoch) (Participant, <-chan zk.Event, bool, error) {
	for {
		names, _, w, err := ep.ChildrenW(ctx, e.Path())
		if errors.Is(err, zk.ErrNoNode) {
			ok, st, w, err := ep.ExistsW(ctx, e.Path())
			if err != nil {
				return Participant{}, nil, false, err
			}
			if !ok {
				return Participant{}, w, false, nil
			}
			// Created meanwhile: our watch is now a data watch on the path,
			// which would fire only when the path changes. Make it fire
			// (a set of the path's data, as it is, at its version), then
			// list the path.
			e.fire(ctx, ep, st.Version, w)
			continue
		}
		if err != nil {
			return Participant{}, nil, false, err
		}
		ps, err := e.read(ctx, ep, names, 1)
		if err != nil {
			e.unwatch(ctx, ep, w, true)
			return Participant{}, nil, false, err
		}
		if len(ps) == 0 {
			return Participant{}, w, true, nil
		}
		return ps[0], w, true, nil
	}
}

// fire makes w, a data watch on the existing election path at version v,
// fire: it sets the path's (empty) data at that version. If the set fails,
// the path changed or went, and the watch fired anyway.
func (e *Election) fire(ctx context.Context, ep *conn.Epoch, v int32, w <-chan zk.Event) {
	cctx, cancel := queue.CleanupContext(ctx, ep)
	defer cancel()
	data, _, err := ep.Get(cctx, e.Path())
	if err == nil {
		_, err = ep.Set(cctx, e.Path(), data, v)
	}
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		e.sess.Logger().Info("leader: could not clear the observer's watch; it stays until the path changes",
			zap.String("path", e.Path()), zap.Error(err))
		return
	}
	e.drain(cctx, ep, w)
}

// drain waits, bounded, for a watch that is known to fire soon.
func (e *Election) drain(ctx context.Context, ep *conn.Epoch, w <-chan zk.Event) {
	t := time.NewTimer(ep.Timeout())
	defer t.Stop()
	select {
	case <-w:
	case <-ep.Done():
	case <-t.C:
	}
}

// unwatch makes our pending watch w fire, so that none is left on the
// server: a child watch fires on a transaction that creates and deletes a
// child (which nobody can list: it exists only inside the transaction); a
// watch on the path's creation fires on a transaction that creates the
// path (and its missing parents) and deletes them again. If the path
// changed meanwhile, the watch has fired anyway.
func (e *Election) unwatch(ctx context.Context, ep *conn.Epoch, w <-chan zk.Event, child bool) {
	select {
	case <-w:
		return
	default:
	}
	cctx, cancel := queue.CleanupContext(ctx, ep)
	defer cancel()
	var levels []string // the paths to create, top first
	if child {
		levels = []string{conn.JoinPath(e.Path(), "observe-"+uuid.NewString())}
	} else {
		for p := e.Path(); p != "/"; p = parent(p) {
			levels = append([]string{p}, levels...)
		}
	}
	// Create as few levels as exist: try the deepest alone, then one more
	// parent each time the server says a parent is missing.
	for k := len(levels) - 1; k >= 0; k-- {
		var ops []any
		for _, p := range levels[k:] {
			ops = append(ops, &zk.CreateRequest{Path: p, Acl: e.sess.ACL()})
		}
		for i := len(levels) - 1; i >= k; i-- {
			ops = append(ops, &zk.DeleteRequest{Path: levels[i], Version: -1})
		}
		_, err := ep.Multi(cctx, ops...)
		if errors.Is(err, zk.ErrNoNode) && k > 0 {
			continue
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			e.sess.Logger().Info("leader: could not clear the observer's watch; it stays until the participants change",
				zap.String("path", e.Path()), zap.Error(err))
			return
		}
		break
	}
	e.drain(cctx, ep, w)
}

// parent is p's parent path.
func parent(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}
