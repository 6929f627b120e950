package conn

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// State is a Session's state as lock holders see it (Curator's names).
type State int32

const (
	// Connected: a new epoch (ZooKeeper session) has begun.
	Connected State = iota + 1
	// Suspended: the connection broke; the session may still be alive on
	// the server. Holders keep their locks (unless WithSuspendedAsLost).
	Suspended
	// Reconnected: the connection is back and the same session survived.
	Reconnected
	// Lost: the epoch ended (expiry, or the local timer); its locks are gone.
	Lost
	// Closed: Close was called. Final.
	Closed
)

var stateNames = [...]string{Connected: "Connected", Suspended: "Suspended", Reconnected: "Reconnected", Lost: "Lost", Closed: "Closed"}

func (s State) String() string {
	if s >= Connected && s <= Closed {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Event is one state transition of a Session.
type Event struct {
	State State
	Epoch *Epoch    // the new epoch for Connected; the one that ended for Lost and Closed (nil if none was live)
	Err   error     // why it ended, for Lost and Closed: ErrSessionExpired, ErrSessionTimeout or ErrClosed
	Time  time.Time // when the session manager saw the transition
}

// Subscribe returns every state transition after the call, in order, none
// dropped. The channel is closed after Closed (at once on a closed Session)
// or once ctx ends; read it until then or cancel ctx.
func (s *Session) Subscribe(ctx context.Context) <-chan Event {
	out := make(chan Event)
	sub := newFifo[Event]()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		close(out)
		return out
	}
	s.subs[sub] = struct{}{}
	go s.pump(ctx, sub, out)
	return out
}

// pump sends sub's events to out until Closed is sent or ctx ends.
func (s *Session) pump(ctx context.Context, sub *fifo[Event], out chan<- Event) {
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub) // a no-op once subs is nil
		s.mu.Unlock()
		close(out)
	}()
	for {
		select {
		case <-sub.signal:
		case <-ctx.Done():
			return
		}
		for _, ev := range sub.drain() {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.State == Closed {
				return
			}
		}
	}
}

// fifo is an unbounded queue for one reader: put never blocks or drops,
// and signals (capacity 1) that drain has something.
type fifo[T any] struct {
	signal chan struct{}
	mu     sync.Mutex // guards items
	items  []T
}

func newFifo[T any]() *fifo[T] {
	return &fifo[T]{signal: make(chan struct{}, 1)}
}

func (q *fifo[T]) put(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *fifo[T]) drain() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}
