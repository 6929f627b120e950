package conn

import (
	"context"
	"fmt"
	"sync"
)

// Subscription receives every state transition of a Session from the moment
// it was made, in order, however slowly it is read: events queue without
// bound and are never dropped. Safe for concurrent use.
type Subscription struct {
	s *Session

	mu     sync.Mutex    // guards the fields below
	queue  []Event       // events not yet returned by Next
	notify chan struct{} // capacity 1; signalled when queue grows or final is set
	final  error         // set once no more events will come (ErrClosed)
}

// Subscribe starts a subscription to the transitions after State(). Close
// it when done (or read until Next returns ErrClosed).
func (s *Session) Subscribe() *Subscription {
	sub := &Subscription{s: s, notify: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		sub.final = ErrClosed
	} else {
		s.subs[sub] = struct{}{}
	}
	return sub
}

// Next returns the next transition, waiting until ctx ends; after Closed
// (or Close), an error matching ErrClosed.
func (sub *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		sub.mu.Lock()
		if len(sub.queue) > 0 {
			ev := sub.queue[0]
			sub.queue[0] = Event{}
			sub.queue = sub.queue[1:]
			sub.mu.Unlock()
			return ev, nil
		}
		final := sub.final
		sub.mu.Unlock()
		if final != nil {
			return Event{}, final
		}
		select {
		case <-sub.notify:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("conn: waiting for a state change: %w", ctx.Err())
		}
	}
}

// Close ends the subscription; queued events are discarded.
func (sub *Subscription) Close() {
	sub.s.mu.Lock()
	if sub.s.subs != nil {
		delete(sub.s.subs, sub)
	}
	sub.s.mu.Unlock()
	sub.mu.Lock()
	sub.queue, sub.final = nil, ErrClosed
	sub.mu.Unlock()
	sub.signal()
}

func (sub *Subscription) push(ev Event, last bool) {
	sub.mu.Lock()
	if sub.final == nil {
		sub.queue = append(sub.queue, ev)
		if last {
			sub.final = ErrClosed
		}
	}
	sub.mu.Unlock()
	sub.signal()
}

func (sub *Subscription) signal() {
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}
