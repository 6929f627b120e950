package attack_test

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_LeaderSharedListingsRequeueCancelStress checks leader.Run
// ("fn must return promptly once its ctx is done: until it returns, it may
// still be running while another participant leads" only when the term
// ends unseen or by someone else's delete or Resign) and "A fencing token
// per grant" for terms: 2 sessions × 4 participants (WithRequeue) on one
// election path, whose Run ctx is cancelled at random (1 in 3 runs, after
// 5–80 ms) and restarted, and whose fn holds for 0–3 ms. Nobody else
// deletes or resigns, so no two fn may run at once, and every term's
// Fence (from LeaseFrom) must be above the last one's.
func TestProbe2_LeaderSharedListingsRequeueCancelStress(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	path := c.Root() + "/r2-leader"
	var inside, terms int32
	var mu sync.Mutex
	var last conn.Fence
	stop := time.Now().Add(7 * time.Second)
	var wg sync.WaitGroup
	for si := 0; si < 2; si++ {
		s := session(t, c.Servers())
		for p := 0; p < 4; p++ {
			id := fmt.Sprintf("s%dp%d", si, p)
			e, err := leader.New(s, path, id, leader.WithRequeue())
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func(seed int64) {
				defer wg.Done()
				r := rand.New(rand.NewSource(seed))
				for time.Now().Before(stop) {
					rctx, cancel := context.WithDeadline(ctx, stop)
					if r.Intn(3) == 0 {
						cancel()
						rctx, cancel = context.WithTimeout(ctx, time.Duration(5+r.Intn(75))*time.Millisecond)
					}
					_ = e.Run(rctx, func(fctx context.Context) error {
						if n := atomic.AddInt32(&inside, 1); n != 1 {
							t.Errorf("%s: %d leaders at once", id, n)
						}
						defer atomic.AddInt32(&inside, -1)
						atomic.AddInt32(&terms, 1)
						f, err := leader.LeaseFrom(fctx).Fence(fctx)
						if err == nil {
							mu.Lock()
							if f.Compare(last) <= 0 {
								t.Errorf("%s: term fence %v not above %v", id, f, last)
							}
							last = f
							mu.Unlock()
						} else if fctx.Err() == nil {
							t.Errorf("%s: fence: %v", id, err)
						}
						select {
						case <-time.After(time.Duration(r.Intn(4)) * time.Millisecond):
						case <-fctx.Done():
						}
						return nil
					})
					cancel()
				}
			}(int64(si*4 + p))
		}
	}
	wg.Wait()
	t.Logf("%d terms", terms)
	if terms < 20 {
		t.Errorf("only %d terms", terms)
	}
}
