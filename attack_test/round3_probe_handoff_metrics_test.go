package attack_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe3_HandoffMetricsMatchFences: goroutines of one session take a
// mutex (and a semaphore mutex) with WithLocalHandoff, while a bystander
// deletes the shared node from time to time and a goroutine of another
// session contends. The metrics must count what happened (conn.Metrics:
// "LockHandoff: a grant passed to a local waiter of the same session
// without a ZooKeeper round trip"; "LockWait ... One per call ... (a local
// waiter's wait included)"): a grant passed in the process is the one whose
// Fence has Pass > 0 (conn.Fence: "Pass numbers the grants made on that
// node: 0 for the grant that created it, 1, 2, ... for each local handoff on
// it"), so the handoffs counted must equal the grants seen with Pass > 0,
// and the granted waits the grants. Fences must grow strictly in grant order
// (each grant checks against the greatest seen so far, under a lock that
// the holders take while they hold). At the end the watches gauge is 0.
func TestProbe3_HandoffMetricsMatchFences(t *testing.T) {
	for _, recipe := range []string{"mutex-handoff", "semaphoremutex-handoff"} {
		t.Run(recipe, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 60*time.Second)
			rec := &metricsRec{}
			sa := session(t, c.Servers(), conn.WithMetrics(rec))
			sb := session(t, c.Servers())
			zc := raw(t, c)
			path := c.Root() + "/r3-hm/" + recipe
			var (
				mu        sync.Mutex
				best      conn.Fence
				grants    int
				passes    int
				backwards []string
				deleted   int
				userLost  int
			)
			const perG, gs = 12, 3
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := 0; g < gs; g++ {
				lk := round3Locker(t, recipe, sa, path, g)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < perG; i++ {
						actx, acancel := context.WithTimeout(ctx, 15*time.Second)
						l, err := lk.Acquire(actx)
						acancel()
						if err != nil {
							t.Errorf("acquire: %v", err)
							return
						}
						f, ferr := l.Fence(ctx)
						mu.Lock()
						grants++
						if ferr == nil {
							if f.Pass > 0 {
								passes++
							}
							if f.Compare(best) <= 0 {
								backwards = append(backwards, f.String()+" after "+best.String())
							} else {
								best = f
							}
						}
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
						if l.Err() != nil {
							mu.Lock()
							userLost++
							mu.Unlock()
						}
						_ = lk.Release(context.WithoutCancel(ctx))
					}
				}()
			}
			// Another session contends, and a bystander deletes nodes.
			lb := round3Locker(t, recipe, sb, path, 9)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					l, err := lb.Acquire(ctx)
					if err != nil {
						return
					}
					f, ferr := l.Fence(ctx)
					mu.Lock()
					if ferr == nil {
						if f.Compare(best) <= 0 {
							backwards = append(backwards, "B "+f.String()+" after "+best.String())
						} else {
							best = f
						}
					}
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					_ = lb.Release(context.WithoutCancel(ctx))
				}
			}()
			go func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					case <-time.After(60 * time.Millisecond):
					}
					for _, p := range []string{path, path + "/locks", path + "/leases"} {
						for _, ch := range children(zc, p) {
							if k%2 == 0 {
								if err := zc.Delete(p+"/"+ch, -1); err == nil {
									mu.Lock()
									deleted++
									mu.Unlock()
								}
							}
						}
					}
				}
			}()
			// Stop B and the bystander once A's goroutines are done.
			doneA := make(chan struct{})
			go func() {
				for {
					mu.Lock()
					n := grants
					mu.Unlock()
					if n >= perG*gs {
						close(doneA)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			select {
			case <-doneA:
			case <-time.After(45 * time.Second):
				t.Error("A's goroutines did not finish")
			}
			close(stop)
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			t.Logf("bystander deletes %d (nodes now %v %v); grants %d, with Pass > 0: %d; metrics: handoffs %d, granted waits %d, holds %d, lost %d",
				deleted, children(zc, path), children(zc, path+"/leases"), grants, passes, rec.count(conn.LockHandoff, "", ""), rec.count(conn.LockWait, "", conn.OutcomeGranted),
				rec.count(conn.LockHold, "", ""), rec.count(conn.LockLost, "", ""))
			t.Logf("grants whose Err was set at release: %d", userLost)
			for _, r := range []string{"mutex", "semaphoremutex", "semaphore", "semaphore-lock"} {
				t.Logf("%s: waits %d, holds %d, lost %d, handoffs %d", r, rec.count(conn.LockWait, r, ""), rec.count(conn.LockHold, r, ""),
					rec.count(conn.LockLost, r, ""), rec.count(conn.LockHandoff, r, ""))
			}
			for _, b := range backwards {
				t.Errorf("fence not above the greatest seen: %s", b)
			}
			if h := rec.count(conn.LockHandoff, "", ""); h != passes {
				t.Errorf("handoffs counted %d, grants with Pass > 0 %d", h, passes)
			}
			if g := rec.count(conn.LockWait, "", conn.OutcomeGranted); g != grants {
				t.Errorf("granted waits counted %d, grants %d", g, grants)
			}
			if !eventually(3*time.Second, func() bool { return rec.watches.Load() == 0 }) {
				t.Errorf("watches gauge %d, want 0", rec.watches.Load())
			}
		})
	}
}
