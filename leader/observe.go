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
// each new one (the zero Participant for none); a slow reader sees the
// latest. Closed, its watch removed, when ctx ends or the session closes.
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
		cur, w, err := e.leaderW(ctx, ep)
		if err != nil { // no watch left behind
			if ctx.Err() == nil && ep.Err() == nil {
				connlink.Of(e.sess).Logger().Debug("leader: observe", zap.Error(err))
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-ctx.Done():
				case <-ep.Done():
				}
				t.Stop()
			}
			if ctx.Err() != nil || ep.Err() != nil {
				return ctx.Err() == nil // an ended epoch took its watches
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

// publish puts p into ch, replacing a value not yet taken (only the
// observer sends, so the send after the drain never blocks).
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

// leaderW reads the leader, watching the path's children (or creation).
func (e *Election) leaderW(ctx context.Context, ep *conn.Epoch) (lock.Participant, <-chan zk.Event, error) {
	for {
		names, _, w, err := connlink.Of(ep).ChildrenW(ctx, e.path())
		if errors.Is(err, zk.ErrNoNode) {
			ok, _, w, err := connlink.Of(ep).ExistsW(ctx, e.path())
			if err != nil || !ok {
				return lock.Participant{}, w, err
			}
			// Created meanwhile: a data watch misses the children.
			e.unwatch(ctx, ep, w)
			continue
		}
		if err != nil {
			return lock.Participant{}, nil, err
		}
		ps, err := e.read(ctx, ep, names, 1)
		if err != nil {
			e.unwatch(ctx, ep, w)
			return lock.Participant{}, nil, err
		}
		if len(ps) == 0 {
			return lock.Participant{}, w, nil
		}
		return ps[0], w, nil
	}
}

// unwatch removes watch w from the server, until bg.Grace after ctx ended.
func (e *Election) unwatch(ctx context.Context, ep *conn.Epoch, w <-chan zk.Event) {
	cctx, cancel := bg.CleanupContext(ctx, ep)
	defer cancel()
	if err := connlink.Of(ep).Unwatch(cctx, w); err != nil && ep.Err() == nil {
		connlink.Of(e.sess).Logger().Info("leader: could not remove the observer's watch; it stays until the participants change",
			zap.String("path", e.path()), zap.Error(err))
	}
}
