package attack_test

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_SharedListingsWithForeignZkLockContenders checks mutex's
// "Mutual exclusion among all processes using the lock path (Curator's
// InterProcessMutex, and the lock nodes of kazoo and go-zookeeper, count as
// contenders)" with this round's shared listings: 8 goroutines of one
// session (a plain handle and a WithLocalHandoff handle; a third of the
// acquires with a 5–60 ms deadline) and two raw go-zookeeper clients
// looping on zk.Lock on the same path. One ledger for all.
func TestProbe2_SharedListingsWithForeignZkLockContenders(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	path := c.Root() + "/r2-foreign/lock"
	s := session(t, c.Servers())
	m1, _ := mutex.New(s, path)
	m2, _ := mutex.New(s, path, mutex.WithLocalHandoff(3, 0))
	var inside, grants, foreign int32
	enter := func(who string) {
		if n := atomic.AddInt32(&inside, 1); n != 1 {
			t.Errorf("%s: %d holders at once", who, n)
		}
		atomic.AddInt32(&grants, 1)
		time.Sleep(2 * time.Millisecond)
		atomic.AddInt32(&inside, -1)
	}
	stop := time.Now().Add(7 * time.Second)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			m := m1
			if g%2 == 1 {
				m = m2
			}
			for time.Now().Before(stop) {
				d := 8 * time.Second
				if r.Intn(3) == 0 {
					d = time.Duration(5+r.Intn(55)) * time.Millisecond
				}
				actx, cancel := context.WithTimeout(ctx, d)
				_, err := m.Acquire(actx)
				cancel()
				if err != nil {
					if errors.Is(err, context.DeadlineExceeded) && d < time.Second {
						continue
					}
					t.Errorf("g%d: %v", g, err)
					return
				}
				enter("ours")
				if err := m.Release(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("g%d: release: %v", g, err)
				}
			}
		}(g)
	}
	for b := 0; b < 2; b++ {
		zc := raw(t, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := zk.NewLock(zc, path, zk.WorldACL(zk.PermAll))
			for time.Now().Before(stop) {
				if err := l.Lock(); err != nil {
					t.Errorf("zk.Lock: %v", err)
					return
				}
				enter("zk.Lock")
				atomic.AddInt32(&foreign, 1)
				if err := l.Unlock(); err != nil {
					t.Errorf("zk.Unlock: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d grants, %d of them go-zookeeper's", grants, foreign)
	if foreign == 0 {
		t.Error("the foreign contenders never got the lock")
	}
}
