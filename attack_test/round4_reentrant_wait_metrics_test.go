package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe4_ReentrantAcquireIsNoWait: an outside user's round-4 finding
// (the docs said "one per call" of LockWait, and re-entrant acquires were
// not reported). The docs now say what the library does (conn.LockWait:
// "a re-entrant call of a goroutine that holds the lock (mutex, rwlock)
// waits for nothing and is not reported, nor is its hold"), and this
// checks it:
//   - mutex: Acquire three times in one goroutine, TryAcquire once more,
//     then four Releases: one wait granted, one hold (one grant);
//   - rwlock write lock, the same;
//   - mutex, re-entry on a lost lease (ErrLeaseLost): no wait reported,
//     one loss node_deleted.
func TestProbe4_ReentrantAcquireIsNoWait(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 60*time.Second)
	zc := raw(t, c)

	t.Run("mutex", func(t *testing.T) {
		rec := &metricsRec{}
		s := session(t, c.Servers(), conn.WithMetrics(rec))
		m, err := mutex.New(s, c.Root()+"/r4-re/m")
		if err != nil {
			t.Fatal(err)
		}
		var first *conn.Lease
		for i := 0; i < 3; i++ {
			l, err := m.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = l
			} else if l != first {
				t.Fatalf("re-entry returned another lease")
			}
		}
		if _, ok, err := m.TryAcquire(ctx); !ok || err != nil {
			t.Fatalf("reentrant TryAcquire: %v %v", ok, err)
		}
		for i := 0; i < 4; i++ {
			if err := m.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := rec.count(conn.LockWait, "mutex", conn.OutcomeGranted); got != 1 {
			t.Errorf("waits granted = %d, want 1 (re-entries are not waits): %s", got, rec.dump())
		}
		if got := rec.count(conn.LockHold, "mutex", ""); got != 1 {
			t.Errorf("holds = %d, want 1 (one grant): %s", got, rec.dump())
		}
	})

	t.Run("rwlock-write", func(t *testing.T) {
		rec := &metricsRec{}
		s := session(t, c.Servers(), conn.WithMetrics(rec))
		rw, err := rwlock.New(s, c.Root()+"/r4-re/rww")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if _, err := rw.WriteLock().Acquire(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 2; i++ {
			if err := rw.WriteLock().Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := rec.count(conn.LockWait, "rwlock", conn.OutcomeGranted); got != 1 {
			t.Errorf("waits granted = %d, want 1 (re-entries are not waits): %s", got, rec.dump())
		}
		if got := rec.count(conn.LockHold, "rwlock", ""); got != 1 {
			t.Errorf("holds = %d, want 1 (one grant): %s", got, rec.dump())
		}
	})

	t.Run("mutex-reentry-lost", func(t *testing.T) {
		rec := &metricsRec{}
		s := session(t, c.Servers(), conn.WithMetrics(rec))
		path := c.Root() + "/r4-re/lost"
		m, err := mutex.New(s, path)
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Lost() // arm the watch
		waitFor(t, 5*time.Second, "lease watch", func() bool { return rec.watches.Load() >= 1 })
		if err := zc.Delete(l.Path(), -1); err != nil {
			t.Fatal(err)
		}
		select {
		case <-l.Lost():
		case <-time.After(5 * time.Second):
			t.Fatal("Lost not closed")
		}
		if _, err := m.Acquire(ctx); !errors.Is(err, conn.ErrLeaseLost) {
			t.Fatalf("re-entry on a lost lease: %v", err)
		}
		if err := m.Release(context.Background()); err != nil {
			t.Fatalf("release after loss: %v", err)
		}
		if got := rec.count(conn.LockWait, "mutex", conn.OutcomeError); got != 0 {
			t.Errorf("waits with error = %d, want 0 (a re-entry is not a wait): %s", got, rec.dump())
		}
		if got := rec.count(conn.LockLost, "mutex", conn.CauseNodeDeleted); got != 1 {
			t.Errorf("losses = %d, want 1: %s", got, rec.dump())
		}
		if got := rec.watches.Load(); got != 0 {
			t.Errorf("watches gauge %d after release, want 0", got)
		}
	})
}
