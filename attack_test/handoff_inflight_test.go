package attack_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_LocalHandoffWaitsForInFlightGuardedWrite checks
// semaphoremutex.WithLocalHandoff (go doc ./semaphoremutex
// WithLocalHandoff): "A release waits for the guarded writes of its grant
// that are in flight (another goroutine may be writing through the handle's
// lease), so none reaches the server after the next grant exists", and the
// same for mutex.WithLocalHandoff, whose doc says "Every grant is a lease of
// its own: released, it refuses guarded writes": with 150 ms of latency on
// the connection, a goroutine's GuardedWrite through grant 1 is in flight
// when grant 1 is released and passed locally to grant 2. Grant 2 must not
// exist before that write has been answered.
func TestProbe_LocalHandoffWaitsForInFlightGuardedWrite(t *testing.T) {
	c := zktest.New(t)
	type handles struct {
		acquire1, acquire2 func(ctx context.Context) (*conn.Lease, error)
		release1, release2 func(ctx context.Context) error
	}
	cases := []struct {
		name string
		mk   func(s *conn.Session, path string) handles
	}{
		{"semaphoremutex", func(s *conn.Session, path string) handles {
			m1, _ := semaphoremutex.New(s, path, semaphoremutex.WithLocalHandoff(8, 0))
			m2, _ := semaphoremutex.New(s, path, semaphoremutex.WithLocalHandoff(8, 0))
			return handles{m1.Acquire, m2.Acquire, m1.Release, m2.Release}
		}},
		{"mutex", func(s *conn.Session, path string) handles {
			m, _ := mutex.New(s, path, mutex.WithLocalHandoff(8, 0))
			return handles{m.Acquire, m.Acquire, m.Release, m.Release}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 25*time.Second)
			px := zktest.NewProxy(t, c.Servers())
			s := session(t, px.Addrs())
			zc := raw(t, c)
			path := c.Root() + "/inflight-" + tc.name
			res := c.Root() + "/inflight-res-" + tc.name
			h := tc.mk(s, path)
			l1, err := h.acquire1(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l1.Epoch().Create(ctx, res, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var writeDone, grant2 time.Time
			var writeErr error
			g2 := make(chan error, 1)
			rel2 := make(chan struct{})
			go func() { // the second grant, on its own goroutine
				l2, err := h.acquire2(ctx)
				mu.Lock()
				grant2 = time.Now()
				mu.Unlock()
				if err == nil {
					_ = l2
					<-rel2
					err = h.release2(context.WithoutCancel(ctx))
				}
				g2 <- err
			}()
			time.Sleep(100 * time.Millisecond) // let grant 2 queue in the process
			px.SetLatency(150 * time.Millisecond)
			wg := sync.WaitGroup{}
			wg.Add(1)
			go func() { // a writer through grant 1
				defer wg.Done()
				_, err := l1.GuardedWrite(ctx, &zk.SetDataRequest{Path: res, Data: []byte("grant1"), Version: -1})
				mu.Lock()
				writeDone, writeErr = time.Now(), err
				mu.Unlock()
			}()
			time.Sleep(30 * time.Millisecond) // the write is on its way (in the proxy's delay)
			if err := h.release1(ctx); err != nil {
				t.Fatalf("release of grant 1: %v", err)
			}
			wg.Wait()
			waitFor(t, 10*time.Second, "grant 2", func() bool { mu.Lock(); defer mu.Unlock(); return !grant2.IsZero() })
			px.SetLatency(0)
			close(rel2)
			if err := <-g2; err != nil {
				t.Fatalf("grant 2: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("grant 1's write answered %v (err %v); grant 2 at %v", writeDone.Format("15:04:05.000"), writeErr, grant2.Format("15:04:05.000"))
			// The two times are taken by two goroutines after their calls
			// return, so they may come out in either order by a scheduling
			// delay (27 µs seen in CI); a release that did not wait would
			// grant 2 while the write is still in the proxy's 150 ms delay
			// each way, a few hundred ms before its answer.
			if writeErr == nil && grant2.Before(writeDone.Add(-20*time.Millisecond)) {
				d, _, _ := zc.Get(res)
				t.Fatalf("grant 2 existed %v before grant 1's in-flight guarded write was answered (committed: %q)", writeDone.Sub(grant2), d)
			}
		})
	}
}
