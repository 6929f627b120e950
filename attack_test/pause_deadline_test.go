package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_DeadlinesKeptWhileServerPaused checks the recipes' "A deadline
// is kept: Acquire and TryAcquire return at the latest 100 ms after ctx ends
// (plus scheduling; the tests allow 250 ms), even when the connection is
// blackholed" (mutex, rwlock, semaphoremutex, exclusive; multilock's "Acquire
// returns at the latest 100 ms after ctx ended, even with the connection
// down"; leader's "a deadline on ctx is the timeout") with the server
// itself frozen (Pause, SIGSTOP) rather than the connection: every call
// with a 600 ms deadline returns within 600+250 ms matching
// DeadlineExceeded; after Resume the session is the same and none of our
// nodes is left.
func TestProbe_DeadlinesKeptWhileServerPaused(t *testing.T) {
	c := zktest.New(t)
	s := session(t, c.Servers(), conn.WithSessionTimeout(8*time.Second))
	root := c.Root() + "/paused"
	ep, err := s.Epoch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Create the parents first so that each call gets as far as its create.
	warm, _ := mutex.New(s, root+"/warm")
	if _, err := warm.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, _ := mutex.New(s, root+"/m")
	rw, _ := rwlock.New(s, root+"/rw")
	sm, _ := semaphoremutex.New(s, root+"/sm")
	sem, _ := semaphoremutex.NewSemaphore(s, root+"/sem", 2)
	x, _ := exclusive.New(s, root+"/x")
	e, _ := leader.New(s, root+"/l", "me")
	ma, _ := mutex.New(s, root+"/ma")
	ml, _ := multilock.New(ma, sm)
	calls := []struct {
		name string
		f    func(ctx context.Context) error
	}{
		{"mutex.Acquire", func(ctx context.Context) error { _, err := m.Acquire(ctx); return err }},
		{"mutex.TryAcquire", func(ctx context.Context) error { _, _, err := m.TryAcquire(ctx); return err }},
		{"rwlock.Write", func(ctx context.Context) error { _, err := rw.WriteLock().Acquire(ctx); return err }},
		{"rwlock.ReadTry", func(ctx context.Context) error { _, _, err := rw.ReadLock().TryAcquire(ctx); return err }},
		{"semaphoremutex", func(ctx context.Context) error { _, err := sm.Acquire(ctx); return err }},
		{"semaphore", func(ctx context.Context) error { _, err := sem.Acquire(ctx); return err }},
		{"exclusive", func(ctx context.Context) error { _, err := x.Acquire(ctx); return err }},
		{"leader.Campaign", func(ctx context.Context) error { _, err := e.Campaign(ctx); return err }},
		{"multilock", func(ctx context.Context) error { _, err := ml.Acquire(ctx); return err }},
	}
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = c.Resume(0)
		}
	}()
	for _, call := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		start := time.Now()
		err := call.f(ctx)
		took := time.Since(start)
		cancel()
		if took > 850*time.Millisecond {
			t.Errorf("%s returned after %v (deadline 600 ms) with the server paused", call.name, took)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want DeadlineExceeded", call.name, err)
		}
	}
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	resumed = true
	zc := raw(t, c)
	waitFor(t, 10*time.Second, "no node of ours left", func() bool { return countNodes(zc, root) == 0 })
	if ep.Err() != nil {
		t.Logf("the epoch ended meanwhile: %v", ep.Err())
	}
}
