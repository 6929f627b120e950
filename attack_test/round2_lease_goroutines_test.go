package attack_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_HeldLeasesCostNoGoroutineAndArmedOnesEnd checks CHANGELOG's
// "A held lock cost a goroutine: a lease starts one only when someone waits
// on its Lost or Revoked" and the brief's "no orphan goroutine or watch"
// (conn: "A watch nobody waits on any more is removed from the server"):
// one goroutine of one session holds 60 mutexes at once, the goroutine
// count must not grow by one per lease; Lost is then armed on every lease
// (each sets a watch on its node, seen with wchp); after every Release,
// with the session still open, the goroutine count comes back and no watch
// remains on any of the nodes.
func TestProbe2_HeldLeasesCostNoGoroutineAndArmedOnesEnd(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	s := session(t, c.Servers())
	const n = 60
	ms := make([]*mutex.InterProcessMutex, n)
	for i := range ms {
		ms[i], _ = mutex.New(s, fmt.Sprintf("%s/r2-cost/m%d", c.Root(), i))
	}
	// Warm up the session's own goroutines with one acquire/release.
	if _, err := ms[0].Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the warm-up's goroutines settle; counted, not relied on
	base := runtime.NumGoroutine()
	leases := make([]*conn.Lease, n)
	for i, m := range ms {
		l, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
	}
	held := runtime.NumGoroutine()
	t.Logf("goroutines: %d before, %d with %d leases held", base, held, n)
	if held-base >= n/2 {
		t.Errorf("%d goroutines for %d held leases", held-base, n)
	}
	for _, l := range leases {
		_ = l.Lost()
	}
	waitFor(t, 10*time.Second, "a watch on every held node", func() bool {
		return watched(c, 0, leases[n-1].Path()) && watched(c, 0, leases[0].Path())
	})
	armed := runtime.NumGoroutine()
	t.Logf("goroutines with Lost armed on all: %d", armed)
	for _, m := range ms {
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range leases {
		select {
		case <-l.Lost():
		case <-time.After(5 * time.Second):
			t.Fatalf("Lost of %s open after Release", l.Path())
		}
	}
	waitFor(t, 10*time.Second, "goroutines back to the count before the holds", func() bool {
		return runtime.NumGoroutine() <= base+2
	})
	for _, l := range leases {
		if watched(c, 0, l.Path()) {
			t.Errorf("watch left on released node %s", l.Path())
		}
	}
}
