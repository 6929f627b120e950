package attack_test

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_RWLockSharedListingsCancelStress checks rwlock's "Readers share,
// writers exclude", "Nothing is left behind: a failed, timed-out or
// cancelled acquire deletes its node" and "A fencing token per grant ...
// growing strictly in the order of the grants", with this round's shared
// listings: 2 sessions × 6 goroutines on one path, plain reads, plain
// writes and write-then-downgrade, a third of the acquires with a deadline
// of 5–60 ms (waiters leave one session's shared listing while others join).
// A ledger checks every entry; a writer's fence must be above every fence
// granted before, a reader's above the last writer's. At the end no node.
func TestProbe2_RWLockSharedListingsCancelStress(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	path := c.Root() + "/r2-rw/lock"
	bys := raw(t, c)
	var (
		mu             sync.Mutex
		readers        int
		writers        int
		maxF, lastW    conn.Fence
		grants, cancel int
	)
	enter := func(g int, write bool, downgrade bool, l *conn.Lease) {
		f, err := l.Fence(ctx)
		mu.Lock()
		defer mu.Unlock()
		grants++
		if err != nil {
			t.Errorf("g%d: fence: %v", g, err)
			return
		}
		switch {
		case write:
			if readers != 0 || writers != 0 {
				t.Errorf("g%d: writer entered beside %d readers, %d writers", g, readers, writers)
			}
			if f.Compare(maxF) <= 0 {
				t.Errorf("g%d: writer's fence %v not above %v", g, f, maxF)
			}
			writers++
			lastW = f
		case downgrade:
			readers++
		default:
			if writers != 0 {
				t.Errorf("g%d: reader entered beside a writer", g)
			}
			if f.Compare(lastW) <= 0 {
				t.Errorf("g%d: reader's fence %v not above the last writer's %v", g, f, lastW)
			}
			readers++
		}
		if f.Compare(maxF) > 0 {
			maxF = f
		}
	}
	leave := func(write bool) {
		mu.Lock()
		if write {
			writers--
		} else {
			readers--
		}
		mu.Unlock()
	}
	stop := time.Now().Add(7 * time.Second)
	var wg sync.WaitGroup
	for si := 0; si < 2; si++ {
		s := session(t, c.Servers())
		rw, err := rwlock.New(s, path)
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				r := rand.New(rand.NewSource(int64(g)))
				rel := context.WithoutCancel(ctx)
				for time.Now().Before(stop) && ctx.Err() == nil {
					d := 6 * time.Second
					if r.Intn(3) == 0 {
						d = time.Duration(5+r.Intn(55)) * time.Millisecond
					}
					kind := r.Intn(3) // 0 read, 1 write, 2 write then downgrade
					k := rw.ReadLock()
					if kind > 0 {
						k = rw.WriteLock()
					}
					actx, cf := context.WithTimeout(ctx, d)
					l, err := k.Acquire(actx)
					cf()
					if err != nil {
						if errors.Is(err, context.DeadlineExceeded) && d < time.Second {
							mu.Lock()
							cancel++
							mu.Unlock()
							continue
						}
						t.Errorf("g%d: acquire: %v", g, err)
						return
					}
					enter(g, kind > 0, false, l)
					if kind == 2 {
						rl, derr := rw.ReadLock().Acquire(ctx)
						if derr != nil {
							t.Errorf("g%d: downgrade: %v", g, derr)
						} else {
							enter(g, false, true, rl)
						}
						leave(true)
						if err := rw.WriteLock().Release(rel); err != nil {
							t.Errorf("g%d: release W after downgrade: %v", g, err)
						}
						if derr == nil {
							leave(false)
							if err := rw.ReadLock().Release(rel); err != nil {
								t.Errorf("g%d: release downgraded R: %v", g, err)
							}
						}
						continue
					}
					leave(kind > 0)
					if err := k.Release(rel); err != nil {
						t.Errorf("g%d: release: %v", g, err)
					}
				}
			}(si*6 + g)
		}
	}
	wg.Wait()
	t.Logf("%d grants, %d acquires timed out while queued", grants, cancel)
	waitFor(t, 10*time.Second, "no lock node left", func() bool { return len(children(bys, path)) == 0 })
}
