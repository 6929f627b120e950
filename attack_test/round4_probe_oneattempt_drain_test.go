package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe4_OneAttemptDrainUnderCuts attacks the drain of one session's
// waiters after plain deletes (CHANGELOG) with conn.WithRetryPolicy's
// MaxAttempts 1 and lost answers: session A (through a proxy, one attempt
// per request) and session B queue 24 waiters interleaved behind a holder
// of session D; revocable mutex and leader (plain deletes). While the queue
// drains, new A acquires keep coming, and the proxy loses the answer of one
// of A's next few requests (BlackholeAfterWrites) and heals once it fired,
// five times. Checked:
//   - never two holders (docs/safety.md guarantee 1; no session ends here);
//   - every Acquire returns (lock: "Acquire blocks until the lock is held or
//     ctx ends"), every B waiter is granted;
//   - lock.ErrCreatePending and cancelled acquires leave nothing: "its node is
//     never left in the queue for the life of the session": once all have
//     returned and released, no node is left under the path, and neither A
//     nor B keeps a watch on the server.
func TestProbe4_OneAttemptDrainUnderCuts(t *testing.T) {
	for _, recipe := range []string{"mutex-revocable", "leader"} {
		t.Run(recipe, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 120*time.Second)
			px := zktest.NewProxy(t, c.Servers())
			sa := session(t, px.Addrs(), conn.WithRetryPolicy(conn.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond, MaxAttempts: 1}))
			sb := session(t, c.Servers())
			sd := session(t, c.Servers())
			zc := raw(t, c)
			path := c.Root() + "/r4-one/" + recipe
			h := gAcquire(ctx, round4Locker(t, recipe, sd, path, 999))
			select {
			case <-h.got:
			case err := <-h.failed:
				t.Fatal(err)
			}
			var mu sync.Mutex
			holders := 0
			var overlaps []string
			var errsA []string
			var grantedB, grantedA, failedA atomic.Int32
			var wg sync.WaitGroup
			waiter := func(s *conn.Session, who string, i int, wctx context.Context) {
				defer wg.Done()
				lk := round4Locker(t, recipe, s, path, i)
				l, err := lk.Acquire(wctx)
				if err != nil {
					mu.Lock()
					if who == "B" {
						overlaps = append(overlaps, fmt.Sprintf("B waiter %d failed: %v", i, err))
					} else {
						errsA = append(errsA, err.Error())
						if !errors.Is(err, context.DeadlineExceeded) {
							t.Logf("A waiter %d: %v (ErrConnectionLoss %v, ErrCreatePending %v, ErrClosed %v)", i, err,
								errors.Is(err, conn.ErrConnectionLoss), errors.Is(err, lock.ErrCreatePending), errors.Is(err, conn.ErrClosed))
						}
					}
					mu.Unlock()
					failedA.Add(1)
					return
				}
				mu.Lock()
				holders++
				if holders > 1 {
					overlaps = append(overlaps, fmt.Sprintf("%s waiter %d granted %s while %d others hold", who, i, l.Path(), holders-1))
				}
				mu.Unlock()
				if who == "B" {
					grantedB.Add(1)
				} else {
					grantedA.Add(1)
				}
				select {
				case <-l.Lost():
				case <-time.After(time.Millisecond):
				}
				mu.Lock()
				holders--
				mu.Unlock()
				_ = lk.Release(context.WithoutCancel(ctx))
			}
			const n = 24
			nB := 0
			for i := 0; i < n; i++ {
				s, who := sa, "A"
				if i%2 == 1 {
					s, who = sb, "B"
					nB++
				}
				before := len(children(zc, path))
				wg.Add(1)
				go waiter(s, who, i, ctx)
				waitFor(t, 10*time.Second, "queued", func() bool { return len(children(zc, path)) > before })
			}
			// churn: new A acquires with short deadlines while the faults come
			stop := make(chan struct{})
			var churn sync.WaitGroup
			churn.Add(1)
			go func() {
				defer churn.Done()
				for i := 1000; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(40 * time.Millisecond):
					}
					wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
					wg.Add(1)
					go func(i int) { defer cancel(); waiter(sa, "A", i, wctx) }(i)
				}
			}()
			if err := h.release(); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(4))
			for k := 0; k < 5; k++ {
				px.BlackholeAfterWrites(1 + rng.Intn(4))
				if !eventually(5*time.Second, px.Blackholed) {
					px.BlackholeAfterWrites(0)
					t.Logf("fault %d did not fire", k)
					continue
				}
				px.Heal()
				ep := epochOf(t, sa) // wait for the reconnect
				_ = ep
			}
			close(stop)
			churn.Wait()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("acquires stuck: B granted %d of %d; nodes %v", grantedB.Load(), nB, sortedBySeq(zc, path))
			}
			mu.Lock()
			for _, o := range overlaps {
				t.Error(o)
			}
			kinds := map[string]int{}
			for _, e := range errsA {
				k := e
				if i := strings.LastIndex(e, ": "); i >= 0 {
					k = e[i+2:]
				}
				kinds[k]++
			}
			mu.Unlock()
			t.Logf("A granted %d, failed %d (%v); B granted %d of %d", grantedA.Load(), failedA.Load(), kinds, grantedB.Load(), nB)
			if !eventually(20*time.Second, func() bool { return len(children(zc, path)) == 0 }) {
				t.Errorf("nodes left after every acquire returned and released: %v", sortedBySeq(zc, path))
			}
			for name, s := range map[string]*conn.Session{"A": sa, "B": sb} {
				sid := epochOf(t, s).SessionID()
				if !eventually(5*time.Second, func() bool { return len(sessionWatches(t, c, 0, sid)) == 0 }) {
					t.Errorf("session %s keeps watches %v", name, sessionWatches(t, c, 0, sid))
				}
			}
		})
	}
}
