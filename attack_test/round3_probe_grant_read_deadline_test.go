package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe3_GrantReadBlackholedKeepsDeadline: two goroutines of one session
// on one lock; the second waits behind the first. Since the new drain, "A
// grant decided on a notification of a plain deletion now first reads the
// waiter's own node" (CHANGELOG), and a leader's Campaign "Before it returns
// ... reads our node once". Here the holder's release (a delete) is answered
// and the connection is blackholed right after the next request, which is
// the waiter's read before its grant: its answer never comes. The waiter's
// ctx ends 1 s later; docs/safety.md guarantee 6: "Every Acquire and
// TryAcquire ... returns at the latest 100 ms after its ctx ends, plus
// scheduling, whatever the connection does" (the suite allows 250 ms), and
// package lock: "Acquire blocks until the lock is held or ctx ends; one whose
// ctx ends first returns an error matching ctx.Err()". The leader is held
// to "Campaign queues our node and blocks until we lead or ctx ends; a
// deadline on ctx is the timeout" with the same 250 ms.
// WithLastHeardTimer: no quorum syncs to fire the blackhole early, and the
// epoch lives for T = 4 s, past the deadline.
func TestProbe3_GrantReadBlackholedKeepsDeadline(t *testing.T) {
	for _, recipe := range []string{"mutex", "semaphoremutex", "rwlock", "leader", "exclusive"} {
		t.Run(recipe, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 40*time.Second)
			px := zktest.NewProxy(t, c.Servers())
			s := session(t, px.Addrs(), conn.WithLastHeardTimer())
			path := c.Root() + "/r3-grantread/" + recipe
			h := gAcquire(ctx, round3Locker(t, recipe, s, path, 1))
			select {
			case <-h.got:
			case err := <-h.failed:
				t.Fatal(err)
			}
			wctx, wcancel := context.WithCancel(ctx)
			defer wcancel()
			w := gAcquire(wctx, round3Locker(t, recipe, s, path, 2))
			waitFor(t, 10*time.Second, "waiter watching", func() bool {
				return len(sessionWatches(t, c, 0, epochOf(t, s).SessionID())) >= 1
			})
			px.BlackholeAfterWrites(2)
			if err := h.release(); err != nil {
				t.Logf("holder's release: %v", err)
			}
			deadline := time.Now().Add(time.Second)
			dctx, dcancel := context.WithDeadline(wctx, deadline)
			defer dcancel()
			// The waiter's own ctx is wctx; bound it by the deadline through
			// cancelling wctx when dctx ends.
			go func() { <-dctx.Done(); wcancel() }()
			select {
			case l := <-w.got:
				t.Logf("waiter granted (blackholed: %v, Err %v)", px.Blackholed(), l.Err())
			case err := <-w.failed:
				late := time.Since(deadline)
				t.Logf("waiter: %v, %v after its ctx ended (blackholed: %v)", err, late, px.Blackholed())
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v does not match ctx's", err)
				}
				if late > 250*time.Millisecond {
					t.Errorf("returned %v after its ctx ended, want at most 250 ms", late)
				}
			case <-time.After(3500 * time.Millisecond):
				t.Errorf("waiter still blocked 2.5 s after its ctx ended (blackholed: %v)", px.Blackholed())
			}
			px.Heal()
		})
	}
}
