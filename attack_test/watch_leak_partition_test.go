package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_NoWatchLeftByWaiterTimedOutWhileBlackholed checks conn/doc.go:
// "when no other watcher of the session waits on that path and kind ...
// the server's watch is removed with removeWatches ..., and it does not
// come back on a reconnect", and each recipe's "Nothing is left behind: a
// failed, timed-out or cancelled acquire deletes its node ... What cannot be
// done within those 100 ms goes on in the background", for a waiter whose
// deadline ends while its connection is blackholed, the same session coming
// back afterwards (the blackhole is shorter than the session timeout).
func TestProbe_NoWatchLeftByWaiterTimedOutWhileBlackholed(t *testing.T) {
	c := zktest.New(t)
	sh := session(t, c.Servers())
	px := zktest.NewProxy(t, c.Servers())
	sw := session(t, px.Addrs())
	zc := raw(t, c)
	type pair struct {
		hold, wait func(ctx context.Context) error
	}
	cases := []struct {
		name string
		mk   func(path string) pair
	}{
		{"mutex", func(path string) pair {
			h, _ := mutex.New(sh, path)
			w, _ := mutex.New(sw, path)
			return pair{func(ctx context.Context) error { _, err := h.Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := w.Acquire(ctx); return err }}
		}},
		{"rwlock", func(path string) pair {
			h, _ := rwlock.New(sh, path)
			w, _ := rwlock.New(sw, path)
			return pair{func(ctx context.Context) error { _, err := h.WriteLock().Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := w.ReadLock().Acquire(ctx); return err }}
		}},
		{"semaphore-2", func(path string) pair {
			h, _ := semaphoremutex.NewSemaphore(sh, path, 2)
			w, _ := semaphoremutex.NewSemaphore(sw, path, 2)
			return pair{func(ctx context.Context) error {
				if _, err := h.Acquire(ctx); err != nil {
					return err
				}
				_, err := h.Acquire(ctx)
				return err
			}, func(ctx context.Context) error { _, err := w.Acquire(ctx); return err }}
		}},
		{"exclusive", func(path string) pair {
			h, _ := exclusive.New(sh, path)
			w, _ := exclusive.New(sw, path)
			return pair{func(ctx context.Context) error { _, err := h.Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := w.Acquire(ctx); return err }}
		}},
		{"leader", func(path string) pair {
			h, _ := leader.New(sh, path, "h")
			w, _ := leader.New(sw, path, "w")
			return pair{func(ctx context.Context) error { _, err := h.Campaign(ctx); return err },
				func(ctx context.Context) error { _, err := w.Campaign(ctx); return err }}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 25*time.Second)
			path := c.Root() + "/bh-watch-" + tc.name
			p := tc.mk(path)
			if err := p.hold(ctx); err != nil {
				t.Fatal(err)
			}
			before := countNodes(zc, path)
			ep, err := sw.Epoch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sid := ep.SessionID()
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- p.wait(wctx) }()
			waitFor(t, 5*time.Second, "the waiter's watch", func() bool {
				return len(watchesUnder(c, 0, path)) > 0
			})
			px.Blackhole()
			time.Sleep(200 * time.Millisecond) // the waiter is cut off (observable only by time)
			cancel()
			start := time.Now()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("waiter: %v, want context.Canceled", err)
				}
				if took := time.Since(start); took > 250*time.Millisecond {
					t.Errorf("waiter returned %v after cancel while blackholed", took)
				}
			case <-time.After(3 * time.Second):
				px.Heal()
				t.Fatalf("waiter did not return 3 s after cancel while blackholed")
			}
			px.Heal()
			waitFor(t, 10*time.Second, "the waiter's session to be back", func() bool {
				ep, err := sw.Epoch(ctx)
				return err == nil && ep.Err() == nil && sw.State().String() != "Suspended"
			})
			if ep2, _ := sw.Epoch(ctx); ep2.SessionID() != sid {
				t.Skipf("the session was not kept across the blackhole (%x -> %x): nothing to check", sid, ep2.SessionID())
			}
			end := time.Now().Add(5 * time.Second)
			var ws []string
			var n int
			for {
				ws, n = watchesUnder(c, 0, path), countNodes(zc, path)
				if (len(ws) == 0 && n == before) || time.Now().After(end) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(ws) != 0 {
				t.Errorf("watches on the server 5 s after the session came back: %v", ws)
			}
			if n != before {
				t.Errorf("ephemeral nodes under %s: %d before the waiter, %d 5 s after the session came back", path, before, n)
			}
		})
	}
}
