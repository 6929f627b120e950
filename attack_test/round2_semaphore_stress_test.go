package attack_test

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_SemaphoreSharedListingsCancelStress checks Semaphore's "at
// most Leases() holders at a time among every process that uses the same
// path" and semaphoremutex's "Nothing is left behind" with this round's
// shared listings: 2 sessions × 8 goroutines on one 3-lease semaphore, a
// third of the acquires with a 5–60 ms deadline, leases returned from a
// goroutine other than the acquirer's half the time. Ledger at every
// entry; no node left at the end.
func TestProbe2_SemaphoreSharedListingsCancelStress(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	path := c.Root() + "/r2-sem"
	bys := raw(t, c)
	const leases = 3
	var inside, grants, peak int32
	stop := time.Now().Add(7 * time.Second)
	var wg sync.WaitGroup
	for si := 0; si < 2; si++ {
		s := session(t, c.Servers())
		sem, err := semaphoremutex.NewSemaphore(s, path, leases)
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				r := rand.New(rand.NewSource(int64(g)))
				for time.Now().Before(stop) {
					d := 8 * time.Second
					if r.Intn(3) == 0 {
						d = time.Duration(5+r.Intn(55)) * time.Millisecond
					}
					actx, cancel := context.WithTimeout(ctx, d)
					l, err := sem.Acquire(actx)
					cancel()
					if err != nil {
						if errors.Is(err, context.DeadlineExceeded) && d < time.Second {
							continue
						}
						t.Errorf("g%d: %v", g, err)
						return
					}
					n := atomic.AddInt32(&inside, 1)
					if n > leases {
						t.Errorf("g%d: %d holders of a %d-lease semaphore", g, n, leases)
					}
					for {
						p := atomic.LoadInt32(&peak)
						if n <= p || atomic.CompareAndSwapInt32(&peak, p, n) {
							break
						}
					}
					atomic.AddInt32(&grants, 1)
					time.Sleep(time.Duration(r.Intn(3)) * time.Millisecond)
					atomic.AddInt32(&inside, -1)
					ret := func() {
						if err := sem.ReturnLease(context.WithoutCancel(ctx), l); err != nil {
							t.Errorf("g%d: return: %v", g, err)
						}
					}
					if r.Intn(2) == 0 {
						ret()
					} else {
						done := make(chan struct{})
						go func() { ret(); close(done) }()
						<-done
					}
				}
			}(si*8 + g)
		}
	}
	wg.Wait()
	t.Logf("%d grants, peak %d holders", grants, peak)
	if peak < 2 {
		t.Errorf("peak %d: the semaphore never shared", peak)
	}
	waitFor(t, 10*time.Second, "no node left", func() bool {
		for _, ch := range children(bys, path) {
			if len(children(bys, path+"/"+ch)) > 0 {
				return false
			}
		}
		return true
	})
}
