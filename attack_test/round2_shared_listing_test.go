package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_SharedListingsMixedHandoffCancelStress checks, this round,
// CHANGELOG's "one session's waiters share their listings" against mutex's
// "Mutual exclusion among all processes using the lock path", conn.Fence's
// "it grows strictly with every grant of a lock, in every configuration" and
// "Nothing is left behind: a failed, timed-out or cancelled acquire deletes
// its node". One session queues many goroutines at once on one path through
// a plain handle and two WithLocalHandoff handles (same bound), next to a
// second session (handoff) and a third (plain); a third of the acquires have
// a deadline of 5–60 ms, so waiters leave the shared listing while others
// join. Every holder checks an in-process occupancy counter, writes a
// register through GuardedWrite with the version it read (a concurrent
// holder's write makes it fail), and compares its Fence with the last one.
// At the end no node and no watch on the lock path may remain.
func TestProbe2_SharedListingsMixedHandoffCancelStress(t *testing.T) {
	c := zktest.New(t)
	path := c.Root() + "/r2-shared/lock"
	reg := c.Root() + "/r2-shared-reg"
	ctx := ctxT(t, 28*time.Second)
	bys := raw(t, c)
	_, _ = bys.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll))
	if _, err := bys.Create(reg, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sA := session(t, c.Servers())
	sB := session(t, c.Servers())
	sC := session(t, c.Servers())
	mk := func(s *conn.Session, opts ...mutex.Option) *mutex.InterProcessMutex {
		m, err := mutex.New(s, path, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	handles := []*mutex.InterProcessMutex{
		mk(sA), mk(sA), mk(sA, mutex.WithLocalHandoff(3, 0)), mk(sA, mutex.WithLocalHandoff(3, 0)),
		mk(sB, mutex.WithLocalHandoff(2, 0)), mk(sC),
	}
	var (
		inside int32
		mu     sync.Mutex
		last   conn.Fence
		grants int
		short  int
	)
	stop := time.Now().Add(8 * time.Second)
	var wg sync.WaitGroup
	for g := 0; g < 14; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			m := handles[g%len(handles)]
			for time.Now().Before(stop) && ctx.Err() == nil {
				d := 6 * time.Second
				if r.Intn(3) == 0 {
					d = time.Duration(5+r.Intn(55)) * time.Millisecond
				}
				actx, cancel := context.WithTimeout(ctx, d)
				lease, err := m.Acquire(actx)
				cancel()
				if err != nil {
					if errors.Is(err, context.DeadlineExceeded) && d < time.Second {
						mu.Lock()
						short++
						mu.Unlock()
						continue
					}
					t.Errorf("g%d: acquire (deadline %v): %v", g, d, err)
					return
				}
				if n := atomic.AddInt32(&inside, 1); n != 1 {
					t.Errorf("g%d: %d holders at once", g, n)
				}
				f, err := lease.Fence(ctx)
				if err != nil {
					t.Errorf("g%d: fence: %v", g, err)
				}
				mu.Lock()
				if grants > 0 && f.Compare(last) <= 0 {
					t.Errorf("g%d: fence %v not above previous %v", g, f, last)
				}
				last = f
				grants++
				mu.Unlock()
				data, st, err := bys.Get(reg)
				if err != nil {
					t.Errorf("read register: %v", err)
				} else {
					n, _ := strconv.Atoi(string(data))
					if _, err := lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: reg, Data: []byte(strconv.Itoa(n + 1)), Version: st.Version}); err != nil {
						t.Errorf("g%d: guarded write: %v", g, err)
					}
				}
				atomic.AddInt32(&inside, -1)
				if err := m.Release(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("g%d: release: %v", g, err)
				}
			}
		}(g)
	}
	wg.Wait()
	t.Logf("%d grants, %d acquires timed out while queued", grants, short)
	if grants < 20 {
		t.Errorf("only %d grants", grants)
	}
	waitFor(t, 10*time.Second, "no lock node left", func() bool { return len(children(bys, path)) == 0 })
	waitFor(t, 10*time.Second, "no watch left on the lock path", func() bool {
		for _, ch := range []string{path} {
			if watched(c, 0, ch) {
				return false
			}
		}
		out, _ := c.FourLetter(context.Background(), 0, "wchp")
		return !containsPrefix(out, path+"/")
	})
}

func containsPrefix(out, prefix string) bool {
	for i := 0; i+len(prefix) <= len(out); i++ {
		if out[i:i+len(prefix)] == prefix {
			return true
		}
	}
	return false
}

var _ = fmt.Sprint
