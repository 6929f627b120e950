package leader

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Observe returns a channel of leader changes: the current leader, then
// each new one (the zero Participant when nobody campaigns). The latest
// value wins: a slow reader may skip leaders but never misses a change.
// Closed when ctx ends or the session is closed. It keeps one watch on the
// path, removed from the server when ctx ends.
func (e *Election) Observe(ctx context.Context) <-chan lock.Participant {
	ch := make(chan lock.Participant, 1)
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan lock.Participant) {
	defer close(ch)
	var last *lock.Participant
	for {
		ep, err := connlink.Of(e.sess).Epoch(ctx)
		if err != nil {
			return // ctx ended or the session closed
		}
		if !e.observeEpoch(ctx, ep, ch, &last) {
			return
		}
	}
}

// observeEpoch observes within ep; false when observing is over.
func (e *Election) observeEpoch(ctx context.Context, ep *conn.Epoch, ch chan lock.Participant, last **lock.Participant) bool {
	delay := 50 * time.Millisecond
	for {
		cur, w, _, err := e.leaderW(ctx, ep)
		if err != nil {
			// No watch is left behind by a failed leaderW.
			switch {
			case ctx.Err() != nil:
				return false
			case ep.Err() != nil:
				return true // watches went with the epoch
			}
			connlink.Of(e.sess).Logger().Debug("leader: observe", zap.Error(err))
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
			delay = min(2*delay, connlink.Of(ep).Timeout())
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
			e.unwatch(ctx, ep, w)
			return false
		}
	}
}

// publish puts p into ch, replacing a value not yet taken. Only the
// observing goroutine sends on ch, so the send after the drain never blocks.
func publish(ch chan lock.Participant, p lock.Participant) {
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

// leaderW reads the leader and leaves a watch on the path's children
// (exists true), or on its creation.
func (e *Election) leaderW(ctx context.Context, ep *conn.Epoch) (lock.Participant, <-chan zk.Event, bool, error) {
	for {
		names, _, w, err := connlink.Of(ep).ChildrenW(ctx, e.path())
		if errors.Is(err, zk.ErrNoNode) {
			ok, _, w, err := connlink.Of(ep).ExistsW(ctx, e.path())
			if err != nil {
				return lock.Participant{}, nil, false, err
			}
			if !ok {
				return lock.Participant{}, w, false, nil
			}
			// Created meanwhile: our watch is a data watch, which misses
			// the children. Remove it and list again.
			e.unwatch(ctx, ep, w)
			continue
		}
		if err != nil {
			return lock.Participant{}, nil, false, err
		}
		ps, err := e.read(ctx, ep, names, 1)
		if err != nil {
			e.unwatch(ctx, ep, w)
			return lock.Participant{}, nil, false, err
		}
		if len(ps) == 0 {
			return lock.Participant{}, w, true, nil
		}
		return ps[0], w, true, nil
	}
}

// unwatch removes pending watch w from the server, waiting at most
// bg.Grace after ctx ended.
func (e *Election) unwatch(ctx context.Context, ep *conn.Epoch, w <-chan zk.Event) {
	cctx, cancel := bg.CleanupContext(ctx, ep)
	defer cancel()
	if err := connlink.Of(ep).Unwatch(cctx, w); err != nil && ep.Err() == nil {
		connlink.Of(e.sess).Logger().Info("leader: could not remove the observer's watch; it stays until the participants change",
			zap.String("path", e.path()), zap.Error(err))
	}
}
