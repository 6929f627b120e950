package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Worker is one contender: its own session and lock handle, and one
// goroutine that makes all its lock calls, since the locks are reentrant
// per goroutine and must be released by the goroutine that took them.
type Worker[L any] struct {
	Name  string
	Sess  *conn.Session
	Lock  L
	calls chan func()   // run in order by the worker's goroutine; closed by Close
	done  chan struct{} // closed when the goroutine ends
}

// NewWorker connects a session with sessionTimeout to servers, makes the
// worker's lock on it with newLock and starts the worker's goroutine.
func NewWorker[L any](ctx context.Context, name string, servers []string, sessionTimeout time.Duration, newLock func(*conn.Session) (L, error)) (*Worker[L], error) {
	sess, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	lock, err := newLock(sess)
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := &Worker[L]{Name: name, Sess: sess, Lock: lock, calls: make(chan func()), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for f := range w.calls {
			f()
		}
	}()
	return w, nil
}

// Async runs f on the worker's goroutine, after the calls before it; the
// channel is closed when f has returned.
func (w *Worker[L]) Async(f func()) <-chan struct{} {
	done := make(chan struct{})
	w.calls <- func() {
		defer close(done)
		f()
	}
	return done
}

// Do runs f on the worker's goroutine and waits for it.
func (w *Worker[L]) Do(f func()) { <-w.Async(f) }

// Close ends the session, then the goroutine, once the calls already
// queued have returned (a call still waiting on the lock returns at once,
// with conn.ErrClosed).
func (w *Worker[L]) Close() {
	w.Sess.Close()
	close(w.calls)
	<-w.done
}
