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

// TestArmedLeaseCostsThreeGoroutines checks docs/benchmarks.md's "A held
// lease runs no goroutine until someone waits on its Lost or Revoked; then
// three": one goroutine of one session holds 60 mutexes; calling Lost on
// each must add at most three goroutines per lease. Found by an outside
// user (round 2): the doc said "a goroutine", and it was 3.00 per lease.
func TestArmedLeaseCostsThreeGoroutines(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	s := session(t, c.Servers())
	const n = 60
	leases := make([]*conn.Lease, n)
	ms := make([]*mutex.InterProcessMutex, n)
	for i := range leases {
		ms[i], _ = mutex.New(s, fmt.Sprintf("%s/r2-armed/m%d", c.Root(), i))
		l, err := ms[i].Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
	}
	t.Cleanup(func() {
		for _, m := range ms {
			_ = m.Release(ctx)
		}
	})
	before := runtime.NumGoroutine()
	for _, l := range leases {
		_ = l.Lost()
	}
	waitFor(t, 10*time.Second, "every node watched", func() bool {
		return watched(c, 0, leases[0].Path()) && watched(c, 0, leases[n-1].Path())
	})
	var after int
	waitFor(t, 5*time.Second, "goroutine count steady", func() bool {
		a := runtime.NumGoroutine()
		time.Sleep(100 * time.Millisecond)
		after = runtime.NumGoroutine()
		return a == after
	})
	per := float64(after-before) / n
	t.Logf("goroutines: %d before arming Lost on %d leases, %d after: %.2f per lease", before, n, after, per)
	if per > 3.1 {
		t.Fatalf("arming Lost costs %.2f goroutines per lease, the docs say three", per)
	}
}
