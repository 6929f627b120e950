package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_EveryCallAfterCloseFailsAtOnce checks conn's "ErrClosed is
// returned by every call made after Close" (go doc ./conn ErrClosed) and the
// recipes' "conn.ErrClosed after Close": with a context that never ends,
// every call on a closed Session — and on a lease taken before Close —
// returns within a second, with an error matching conn.ErrClosed (or, for
// an epoch's operations, conn.ErrEpochEnded); Observe's channel closes.
func TestProbe_EveryCallAfterCloseFailsAtOnce(t *testing.T) {
	c := zktest.New(t)
	ctx := context.Background()
	s := session(t, c.Servers())
	root := c.Root() + "/after-close"
	held, _ := mutex.New(s, root+"/held")
	l, err := held.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := mutex.New(s, root+"/m")
	rw, _ := rwlock.New(s, root+"/rw")
	sm, _ := semaphoremutex.New(s, root+"/sm")
	sem, _ := semaphoremutex.NewSemaphore(s, root+"/sem", 2)
	x, _ := exclusive.New(s, root+"/x")
	e, _ := leader.New(s, root+"/l", "me")
	ml, _ := multilock.New(m, sm)
	if err := s.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	calls := map[string]func() error{
		"Session.Epoch":       func() error { _, err := s.Epoch(ctx); return err },
		"mutex.Acquire":       func() error { _, err := m.Acquire(ctx); return err },
		"mutex.TryAcquire":    func() error { _, _, err := m.TryAcquire(ctx); return err },
		"rwlock.Read":         func() error { _, err := rw.ReadLock().Acquire(ctx); return err },
		"rwlock.Write":        func() error { _, err := rw.WriteLock().Acquire(ctx); return err },
		"semaphoremutex":      func() error { _, err := sm.Acquire(ctx); return err },
		"semaphore":           func() error { _, err := sem.Acquire(ctx); return err },
		"exclusive":           func() error { _, err := x.Acquire(ctx); return err },
		"leader.Campaign":     func() error { _, err := e.Campaign(ctx); return err },
		"leader.Run":          func() error { return e.Run(ctx, func(context.Context) error { return nil }) },
		"leader.Leader":       func() error { _, err := e.Leader(ctx); return err },
		"leader.Participants": func() error { _, err := e.Participants(ctx); return err },
		"multilock.Acquire":   func() error { _, err := ml.Acquire(ctx); return err },
		"mutex.Participants":  func() error { _, err := m.Participants(ctx); return err },
		"Lease.GuardedWrite": func() error {
			_, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: root + "-res", Acl: zk.WorldACL(zk.PermAll)})
			return err
		},
		"Lease.Epoch.Get": func() error { _, _, err := l.Epoch().Get(ctx, "/"); return err },
	}
	for name, f := range calls {
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			switch {
			case name == "Lease.GuardedWrite":
				if !errors.Is(err, conn.ErrLeaseLost) && !errors.Is(err, conn.ErrClosed) && !errors.Is(err, conn.ErrEpochEnded) {
					t.Errorf("%s after Close: %v", name, err)
				}
			case !errors.Is(err, conn.ErrClosed) && !errors.Is(err, conn.ErrEpochEnded):
				t.Errorf("%s after Close: %v, want conn.ErrClosed", name, err)
			}
		case <-time.After(time.Second):
			t.Errorf("%s after Close still running after 1 s (ctx never ends)", name)
		}
	}
	// On the goroutine that took it: lock's "Release after loss (Lost
	// closed) returns nil".
	if err := held.Release(ctx); err != nil {
		t.Errorf("held.Release after Close: %v, want nil (the node went with the session)", err)
	}
	obs := e.Observe(ctx)
	deadline := time.After(time.Second)
	for open := true; open; {
		select {
		case _, open = <-obs:
		case <-deadline:
			t.Fatal("Observe's channel after Close not closed within 1 s")
		}
	}
}
