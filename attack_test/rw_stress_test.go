package attack_test

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_RWLockDowngradeStress checks rwlock/doc.go: "Readers share,
// writers exclude: while a writer holds the lock, no other contender ...
// holds it" together with "# Downgrade" (hold W, take R, release W: still a
// reader; the W node kept while a writer is queued between), under load:
// 3 sessions × 3 goroutines, each looping over plain reads, plain writes
// and write-then-downgrade, for 4 s. An in-process ledger (readers,
// writers) is checked at every entry.
func TestProbe_RWLockDowngradeStress(t *testing.T) {
	c := zktest.New(t)
	path := c.Root() + "/rw-stress"
	var mu sync.Mutex
	readers, writers := 0, 0
	violation := make(chan string, 16)
	check := func(who string) {
		if writers > 1 || (writers == 1 && readers > 0) {
			select {
			case violation <- fmt.Sprintf("%s: writers=%d readers=%d", who, writers, readers):
			default:
			}
		}
	}
	ctx := ctxT(t, 25*time.Second)
	stop := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	var counts [3]int
	var cmu sync.Mutex
	for si := 0; si < 3; si++ {
		s := session(t, c.Servers())
		rw, err := rwlock.New(s, path)
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func(id string, seed int64) {
				defer wg.Done()
				r := rand.New(rand.NewSource(seed))
				for time.Now().Before(stop) {
					hold := func() { time.Sleep(time.Duration(r.Intn(3)) * time.Millisecond) }
					kind := r.Intn(3)
					switch kind {
					case 0: // read
						if _, err := rw.ReadLock().Acquire(ctx); err != nil {
							t.Errorf("%s read: %v", id, err)
							return
						}
						mu.Lock()
						readers++
						check(id + " read")
						mu.Unlock()
						hold()
						mu.Lock()
						readers--
						mu.Unlock()
						if err := rw.ReadLock().Release(ctx); err != nil {
							t.Errorf("%s read release: %v", id, err)
							return
						}
					case 1, 2: // write, or write then downgrade
						if _, err := rw.WriteLock().Acquire(ctx); err != nil {
							t.Errorf("%s write: %v", id, err)
							return
						}
						mu.Lock()
						writers++
						check(id + " write")
						mu.Unlock()
						hold()
						if kind == 2 {
							if _, err := rw.ReadLock().Acquire(ctx); err != nil {
								t.Errorf("%s downgrade: %v", id, err)
								return
							}
						}
						mu.Lock()
						writers--
						if kind == 2 {
							readers++
						}
						mu.Unlock()
						if err := rw.WriteLock().Release(ctx); err != nil {
							t.Errorf("%s write release: %v", id, err)
							return
						}
						if kind == 2 {
							hold()
							mu.Lock()
							check(id + " downgraded")
							readers--
							mu.Unlock()
							if err := rw.ReadLock().Release(ctx); err != nil {
								t.Errorf("%s downgraded read release: %v", id, err)
								return
							}
						}
					}
					cmu.Lock()
					counts[kind]++
					cmu.Unlock()
				}
			}(fmt.Sprintf("s%dg%d", si, g), int64(si*10+g))
		}
	}
	wg.Wait()
	close(violation)
	for v := range violation {
		t.Errorf("exclusion broken: %s", v)
	}
	t.Logf("reads %d, writes %d, downgrades %d", counts[0], counts[1], counts[2])
	zc := raw(t, c)
	waitFor(t, 5*time.Second, "no node left", func() bool { return countNodes(zc, path) == 0 })
}
