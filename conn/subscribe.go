package conn

import (
	"context"
	"sync"
)

// Subscribe returns every state transition after the call, in order, never
// dropping one however slowly the channel is read (they queue without bound).
// The channel is closed after Closed (at once on a closed Session) or once ctx
// ends; read it until then or cancel ctx, or its goroutine stays.
func (s *Session) Subscribe(ctx context.Context) <-chan Event {
	out := make(chan Event)
	sub := &subscription{notify: make(chan struct{}, 1)}
	s.mu.Lock()
	closed := s.subs == nil
	if !closed {
		s.subs[sub] = struct{}{}
	}
	s.mu.Unlock()
	if closed {
		close(out)
		return out
	}
	go s.pump(ctx, sub, out)
	return out
}

// subscription is one Subscribe's queue, filled by transitionLocked and
// emptied into the channel by pump.
type subscription struct {
	mu     sync.Mutex    // guards the fields below
	queue  []Event       // events not yet sent
	last   bool          // Closed is queued: nothing follows it
	notify chan struct{} // capacity 1; signalled when queue grows
}

// pump sends sub's events to out until Closed is sent or ctx ends, then
// closes out and forgets sub.
func (s *Session) pump(ctx context.Context, sub *subscription, out chan<- Event) {
	defer close(out)
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub) // a no-op once subs is nil
		s.mu.Unlock()
	}()
	for {
		sub.mu.Lock()
		if len(sub.queue) == 0 {
			last := sub.last
			sub.mu.Unlock()
			if last {
				return
			}
			select {
			case <-sub.notify:
				continue
			case <-ctx.Done():
				return
			}
		}
		ev := sub.queue[0]
		sub.queue[0] = Event{}
		sub.queue = sub.queue[1:]
		sub.mu.Unlock()
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
	}
}

func (sub *subscription) push(ev Event, last bool) {
	sub.mu.Lock()
	sub.queue = append(sub.queue, ev)
	sub.last = last
	sub.mu.Unlock()
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}
