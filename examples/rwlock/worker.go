package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// sessionTimeout of each worker's session.
const sessionTimeout = 4 * time.Second

// worker is one contender: its own session and lock handle, and one
// goroutine that makes all its lock calls, since the lock is reentrant per
// goroutine and must be released by the goroutine that took it.
type worker struct {
	name  string
	sess  *conn.Session
	rw    *rwlock.RWLock
	calls chan func()   // run in order by the worker's goroutine; closed by close
	done  chan struct{} // closed when the goroutine ends
}

func newWorker(ctx context.Context, name string, servers []string, lockPath string) (*worker, error) {
	sess, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rw, err := rwlock.New(sess, lockPath)
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := &worker{name: name, sess: sess, rw: rw, calls: make(chan func()), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for f := range w.calls {
			f()
		}
	}()
	return w, nil
}

// async runs f on the worker's goroutine, after the calls before it; the
// channel is closed when f has returned.
func (w *worker) async(f func()) <-chan struct{} {
	done := make(chan struct{})
	w.calls <- func() {
		defer close(done)
		f()
	}
	return done
}

// do runs f on the worker's goroutine and waits for it.
func (w *worker) do(f func()) { <-w.async(f) }

// close ends the session, then the goroutine, once the calls already
// queued have returned (a call still waiting on the lock returns at once,
// with conn.ErrClosed).
func (w *worker) close() {
	w.sess.Close()
	close(w.calls)
	<-w.done
}

// createNodes creates the data nodes (and their parents, as containers).
func createNodes(ctx context.Context, s *conn.Session, paths ...string) error {
	ep, err := s.Epoch(ctx)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := ep.CreateParents(ctx, p); err != nil {
			return err
		}
		if _, err := ep.Create(ctx, p, []byte("0"), 0, s.ACL()); err != nil {
			return err
		}
	}
	return nil
}

// deleteNodes removes the data nodes; ZooKeeper reaps their parents, which
// are containers, once they are empty.
func deleteNodes(s *conn.Session, paths ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep, err := s.Epoch(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range paths {
		if err := ep.Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// read returns the data of the node at path.
func read(ctx context.Context, s *conn.Session, path string) (string, error) {
	ep, err := s.Epoch(ctx)
	if err != nil {
		return "", err
	}
	data, _, err := ep.Get(ctx, path)
	return string(data), err
}

// watchRequests counts the watching reads of s: a contender that finds the
// lock taken sets a watch before it waits, so one more means it queued.
func watchRequests(s *conn.Session) int64 {
	st := s.Stats()
	return st.Requests[conn.OpGetW] + st.Requests[conn.OpExists]
}

// waitFor polls cond until it holds, ctx ends or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
