package attack_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_DeadlinesKeptBySharedListingWaitersBlackholed checks mutex's "A
// deadline is kept: Acquire and TryAcquire return at the latest 100 ms
// after ctx ends (plus scheduling; the tests allow 250 ms), even when the
// connection is blackholed before or during the create", for waiters of
// one session sharing their listings: B holds; 20 goroutines of A (half
// through a WithLocalHandoff handle) start acquiring with deadlines
// staggered 150 ms – 1.1 s, and A's connection is blackholed a few ms
// later, with creates and listings in flight. Every Acquire must return
// within 250 ms of its deadline; after Heal no node of A's may remain.
func TestProbe2_DeadlinesKeptBySharedListingWaitersBlackholed(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	path := c.Root() + "/r2-deadline/lock"
	bys := raw(t, c)
	px := zktest.NewProxy(t, c.Servers())
	sA := session(t, px.Addrs(), conn.WithSessionTimeout(8*time.Second))
	sB := session(t, c.Servers())
	mB, _ := mutex.New(sB, path)
	b := hold(ctx, mB)
	b.wait(t, 10*time.Second, "B")
	m1, _ := mutex.New(sA, path)
	m2, _ := mutex.New(sA, path, mutex.WithLocalHandoff(3, 0))
	var wg sync.WaitGroup
	var mu sync.Mutex
	worst := time.Duration(0)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m := m1
			if i%2 == 1 {
				m = m2
			}
			deadline := time.Now().Add(150*time.Millisecond + time.Duration(i)*50*time.Millisecond)
			actx, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			_, err := m.Acquire(actx)
			late := time.Since(deadline)
			if err == nil {
				t.Errorf("w%d: granted while B holds", i)
			}
			mu.Lock()
			if late > worst {
				worst = late
			}
			mu.Unlock()
			if late > 250*time.Millisecond {
				t.Errorf("w%d: returned %v after its deadline: %v", i, late, err)
			}
		}(i)
	}
	time.Sleep(5 * time.Millisecond) // some requests in flight; the checks do not depend on it
	px.Blackhole()
	wg.Wait()
	t.Logf("latest return: %v after the deadline", worst)
	px.Heal()
	waitFor(t, 15*time.Second, "only B's node left", func() bool { return len(children(bys, path)) == 1 })
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
}
