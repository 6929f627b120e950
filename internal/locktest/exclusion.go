package locktest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testMutualExclusion: many contenders on separate sessions, several rounds
// each, never two inside.
func (s *suite) testMutualExclusion(t *testing.T) {
	n, rounds := s.cfg.contenders, s.cfg.rounds
	path := UniquePath(s.cluster, "exclusion")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, n+1)
	observer := sessions[n]
	mon, err := newMonitor(Ctx(t, 10*time.Second), observer, path)
	require.NoError(t, err)
	locks := make([]Locker, n)
	for i := range locks {
		locks[i] = s.newLock(t, sessions[i], path)
	}

	ctx := Ctx(t, 60*time.Second)
	begin := time.Now()
	errs := s.hammer(ctx, locks, rounds, nil, mon)
	for _, err := range errs {
		t.Error(err)
	}
	mon.report(t)
	assert.Equal(t, n*rounds, mon.holds(), "every contender held the lock every round")
	assert.Empty(t, ephemeralsOrFail(t, observer, path), "no ephemeral node left under the lock path")
	t.Logf("%d contenders × %d rounds: %d holds in %v", n, rounds, mon.holds(), time.Since(begin).Round(time.Millisecond))
}

// hammer runs each lock through rounds of acquire, enter, exit, release,
// all at once, and returns every error seen (no t.Fatal off the test
// goroutine). With a non-nil until, each contender goes on past rounds
// until until is closed.
func (s *suite) hammer(ctx context.Context, locks []Locker, rounds int, until <-chan struct{}, mon *monitor) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	start := make(chan struct{}) // closed once every goroutine exists
	for i, lk := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for r := 0; r < rounds || until != nil && !isClosed(until); r++ {
				lease, err := lk.Acquire(ctx)
				if err != nil {
					fail(fmt.Errorf("contender %d round %d: acquire: %w", i, r, err))
					return
				}
				at, err := mon.enter(ctx, i, lease)
				if err != nil {
					fail(fmt.Errorf("contender %d round %d: guard: %w", i, r, err))
				}
				if err := mon.exit(ctx, i, lease, at); err != nil {
					fail(fmt.Errorf("contender %d round %d: guard: %w", i, r, err))
				}
				if err := lk.Release(ctx); err != nil {
					fail(fmt.Errorf("contender %d round %d: release: %w", i, r, err))
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// testFIFO: contenders that queue one after another (each observed waiting
// before the next starts) are granted in that order.
func (s *suite) testFIFO(t *testing.T) {
	const k = 5
	path := UniquePath(s.cluster, "fifo")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, k+1)
	holder := s.newLock(t, sessions[0], path)
	mustAcquire(t, holder, 10*time.Second)

	ctx := Ctx(t, 30*time.Second)
	var (
		mu    sync.Mutex
		order []int
		errs  []error
		wg    sync.WaitGroup
	)
	for i := 1; i <= k; i++ {
		lk := s.newLock(t, sessions[i], path)
		before := watchesSet(sessions[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := lk.Acquire(ctx)
			mu.Lock()
			if err != nil {
				errs = append(errs, fmt.Errorf("contender %d: acquire: %w", i, err))
				mu.Unlock()
				return
			}
			order = append(order, i)
			mu.Unlock()
			if err := lk.Release(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("contender %d: release: %w", i, err))
				mu.Unlock()
			}
		}()
		if !WaitQueued(t, sessions[i], before, 10*time.Second) {
			break
		}
	}
	mustRelease(t, holder, 10*time.Second)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5}, order, "grants in queue order")
}
