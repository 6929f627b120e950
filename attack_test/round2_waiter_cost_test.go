package attack_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_WaiterGoroutineCost checks docs/benchmarks.md's "Every waiter
// runs two goroutines after the change as before: the caller's, and conn's
// forwarder of its one watch": 40 goroutines of one session wait on one
// mutex held by another session; once each waiter's watch is set (the
// server's watch count), the process must run at most about two
// goroutines per waiter (we allow 2.5).
func TestProbe2_WaiterGoroutineCost(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	path := c.Root() + "/r2-wcost/lock"
	bys := raw(t, c)
	sA := session(t, c.Servers())
	sB := session(t, c.Servers())
	mB, _ := mutex.New(sB, path)
	b := hold(ctx, mB)
	b.wait(t, 10*time.Second, "B")
	m, _ := mutex.New(sA, path)
	base := runtime.NumGoroutine()
	const n = 40
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Acquire(wctx); err == nil {
				_ = m.Release(ctx)
			}
		}()
	}
	waitFor(t, 10*time.Second, "every waiter queued and watching", func() bool {
		if len(children(bys, path)) != n+1 {
			return false
		}
		mm, err := c.Mntr(ctx, 0)
		return err == nil && mm["zk_watch_count"] == "40"
	})
	var now int
	waitFor(t, 5*time.Second, "goroutine count steady", func() bool {
		a := runtime.NumGoroutine()
		time.Sleep(100 * time.Millisecond)
		now = runtime.NumGoroutine()
		return a == now
	})
	per := float64(now-base) / n
	t.Logf("goroutines: %d before, %d with %d waiters: %.2f per waiter", base, now, n, per)
	cancel()
	wg.Wait()
	_ = b.stop()
	if per > 2.5 {
		t.Fatalf("%.2f goroutines per waiter; the docs say two", per)
	}
}
