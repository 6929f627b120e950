package attack_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// electionLocker makes a leader.Election a simpleLocker.
type electionLocker struct{ e *leader.Election }

func (l electionLocker) Acquire(ctx context.Context) (*conn.Lease, error) { return l.e.Campaign(ctx) }
func (l electionLocker) Release(ctx context.Context) error                { return l.e.Resign(ctx) }

// round3Recipes makes a fresh handle of each recipe on path in s.
func round3Locker(t *testing.T, recipe string, s *conn.Session, path string, i int) simpleLocker {
	t.Helper()
	switch recipe {
	case "mutex":
		m, _ := mutex.New(s, path)
		return m
	case "mutex-handoff":
		m, err := mutex.New(s, path, mutex.WithLocalHandoff(3, 0))
		if err != nil {
			t.Fatal(err)
		}
		return m
	case "semaphoremutex":
		m, _ := semaphoremutex.New(s, path)
		return m
	case "semaphoremutex-handoff":
		m, err := semaphoremutex.New(s, path, semaphoremutex.WithLocalHandoff(3, 0))
		if err != nil {
			t.Fatal(err)
		}
		return m
	case "rwlock":
		rw, _ := rwlock.New(s, path)
		return rw.WriteLock()
	case "exclusive":
		m, _ := exclusive.New(s, path)
		return m
	case "leader":
		e, err := leader.New(s, path, fmt.Sprintf("p%d", i))
		if err != nil {
			t.Fatal(err)
		}
		return electionLocker{e}
	}
	t.Fatalf("recipe %q", recipe)
	return nil
}

// TestProbe3_ExpiryMidDrainMetrics: B holds the lock; four goroutines of
// session A wait (each with its own handle); A's ZooKeeper session is
// expired by the server (zktest.ExpireEpoch) while they wait, so, as package
// lock says, "A session lost while waiting is not an error: Acquire starts
// over in the next one". B releases, and A's goroutines are granted one
// after the other, each watching its lease's Lost, and release.
//
// Checked: never two of them holding at once (docs/safety.md guarantee 1);
// every Acquire granted; conn.Metrics "LockWait: ... One per call" with
// outcome granted (4 of them, nothing else); the watches gauge back to 0
// ("It rises with the waiters and comes back down as they are granted or
// give up; a count that only grows is watches left behind"); and no watch
// of A's session left on the server (guarantee 2).
func TestProbe3_ExpiryMidDrainMetrics(t *testing.T) {
	for _, recipe := range []string{"mutex", "mutex-handoff", "semaphoremutex", "semaphoremutex-handoff", "rwlock", "exclusive", "leader"} {
		t.Run(recipe, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 60*time.Second)
			rec := &metricsRec{}
			sa := session(t, c.Servers(), conn.WithMetrics(rec))
			sb := session(t, c.Servers())
			zc := raw(t, c)
			path := c.Root() + "/r3-exp/" + recipe
			lb := round3Locker(t, recipe, sb, path, 100)
			bh := gAcquire(ctx, lb)
			select {
			case <-bh.got:
			case err := <-bh.failed:
				t.Fatal(err)
			}
			const n = 4
			var inside, maxInside, granted atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				lk := round3Locker(t, recipe, sa, path, i)
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := lk.Acquire(ctx)
					if err != nil {
						errs <- err
						return
					}
					granted.Add(1)
					k := inside.Add(1)
					for {
						m := maxInside.Load()
						if k <= m || maxInside.CompareAndSwap(m, k) {
							break
						}
					}
					select {
					case <-l.Lost():
						errs <- fmt.Errorf("lease lost while held: %v", l.Err())
					case <-time.After(50 * time.Millisecond):
					}
					inside.Add(-1)
					if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
						errs <- fmt.Errorf("release: %w", err)
					}
				}()
			}
			waitFor(t, 10*time.Second, "A's waiters watching", func() bool { return rec.watches.Load() >= 1 })
			time.Sleep(200 * time.Millisecond) // not a race fix: give every waiter time to queue before the expiry
			ep := epochOf(t, sa)
			if err := zktest.ExpireEpoch(ctx, c.Servers()[0], ep); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ep.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("epoch not ended")
			}
			ep2 := epochOf(t, sa)
			waitFor(t, 10*time.Second, "A's waiters watching again", func() bool {
				return len(sessionWatches(t, c, 0, epochOf(t, sa).SessionID())) >= 1
			})
			time.Sleep(200 * time.Millisecond) // not a race fix: let the waiters queue again before the handoff
			if err := bh.release(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("A's waiters not all granted: %d of %d; nodes %v", granted.Load(), n, children(zc, path))
			}
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if m := maxInside.Load(); m > 1 {
				t.Errorf("%d of A's goroutines held at once", m)
			}
			if g := rec.count(conn.LockWait, "", conn.OutcomeGranted); g != n {
				t.Errorf("waits granted: %d, want %d (%s)", g, n, rec.dump())
			}
			if w := rec.count(conn.LockWait, "", ""); w != n {
				t.Errorf("waits reported: %d, want %d, one per call (%s)", w, n, rec.dump())
			}
			if !eventually(3*time.Second, func() bool { return rec.watches.Load() == 0 }) {
				t.Errorf("watches gauge %d, want 0", rec.watches.Load())
			}
			if !eventually(3*time.Second, func() bool { return len(sessionWatches(t, c, 0, ep2.SessionID())) == 0 }) {
				t.Errorf("server holds watches of A's session: %v", sessionWatches(t, c, 0, ep2.SessionID()))
			}
		})
	}
}
