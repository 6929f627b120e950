package attack_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_MultiLockOverLocalHandoffStress checks multilock/doc.go's "Two
// MultiLocks over overlapping sets (A,B and B,A) take the shared locks in
// the same order, so neither can hold one while waiting for one the other
// holds" and mutual exclusion, over locks with in-process handoff
// (mutex.WithLocalHandoff, semaphoremutex.WithLocalHandoff), with conn.Fence's
// "grows strictly with every grant of a lock": 2 sessions × 3 goroutines,
// each looping over MultiLocks of {A,B}, {B,C} or {C,A} for 4 s. Every
// grant is checked against an in-process ledger per lock, and each lock's
// fences must grow in the order the ledger saw the grants.
func TestProbe_MultiLockOverLocalHandoffStress(t *testing.T) {
	c := zktest.New(t)
	root := c.Root() + "/ml-handoff"
	ctx := ctxT(t, 25*time.Second)
	type ledger struct {
		holder string
		last   conn.Fence
	}
	var mu sync.Mutex
	book := map[string]*ledger{"/a": {}, "/b": {}, "/c": {}}
	stop := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	var grants int
	for si := 0; si < 2; si++ {
		s := session(t, c.Servers())
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func(id string, g int) {
				defer wg.Done()
				mk := func(p string) multilock.Locker {
					if p == "/b" {
						l, _ := semaphoremutex.New(s, root+p, semaphoremutex.WithLocalHandoff(3, 0))
						return l
					}
					l, _ := mutex.New(s, root+p, mutex.WithLocalHandoff(3, 0))
					return l
				}
				sets := [][]string{{"/a", "/b"}, {"/c", "/b"}, {"/a", "/c"}}
				for i := 0; time.Now().Before(stop); i++ {
					set := sets[(g+i)%3]
					m, err := multilock.New(mk(set[0]), mk(set[1]))
					if err != nil {
						t.Error(err)
						return
					}
					actx, cancel := context.WithTimeout(ctx, 8*time.Second)
					leases, err := m.Acquire(actx)
					cancel()
					if err != nil {
						t.Errorf("%s: acquire %v: %v", id, set, err)
						return
					}
					mu.Lock()
					for _, l := range leases {
						p := l.Path()
						key := ""
						for k := range book {
							if len(p) > len(root+k) && p[:len(root+k)+1] == root+k+"/" {
								key = k
							}
						}
						led := book[key]
						if led == nil {
							t.Errorf("lease %s under no known lock", p)
							continue
						}
						if led.holder != "" {
							t.Errorf("%s: two holders of %s: %s and %s", id, key, led.holder, id)
						}
						led.holder = id
						f, err := l.Fence(ctx)
						if err != nil {
							t.Errorf("%s: fence %s: %v", id, key, err)
						} else if f.Compare(led.last) <= 0 {
							t.Errorf("%s: fence of %s went from %v to %v", id, key, led.last, f)
						} else {
							led.last = f
						}
					}
					grants++
					mu.Unlock()
					time.Sleep(time.Millisecond)
					mu.Lock()
					for _, led := range book {
						if led.holder == id {
							led.holder = ""
						}
					}
					mu.Unlock()
					if err := m.Release(ctx); err != nil {
						t.Errorf("%s: release: %v", id, err)
						return
					}
				}
			}(fmt.Sprintf("s%dg%d", si, g), g)
		}
	}
	wg.Wait()
	t.Logf("%d multilock grants", grants)
	zc := raw(t, c)
	waitFor(t, 5*time.Second, "no node left", func() bool { return countNodes(zc, root) == 0 })
}
