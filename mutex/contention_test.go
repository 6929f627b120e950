package mutex_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// TestMutualExclusion: 10 sessions × 20 rounds are never two inside, judged
// by an in-process counter and by the server (an ephemeral guard node each
// holder must create), and grants come in queue order.
func TestMutualExclusion(t *testing.T) {
	const sessions, rounds = 10, 20
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	guard := path + "-guard"
	ctx := testzk.Ctx(t, 2*time.Minute)

	var inside atomic.Int32
	var mu sync.Mutex // guards grants
	var grants []int32
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		s := testzk.Connect(t, c.Servers())
		m := newMutex(t, s, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- contend(ctx, m, rounds, guard, &inside, func(seq int32) {
				mu.Lock()
				grants = append(grants, seq)
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, grants, sessions*rounds)
	for i := 1; i < len(grants); i++ {
		require.True(t, locknode.Before(grants[i-1], grants[i]), "grant %d: sequence %d after %d: not FIFO", i, grants[i], grants[i-1])
	}
	assert.Empty(t, testzk.Children(t, testzk.Connect(t, c.Servers()), path))
}

// contend is one contender's rounds; record is called inside the lock.
func contend(ctx context.Context, m *mutex.InterProcessMutex, rounds int, guard string, inside *atomic.Int32, record func(int32)) error {
	for r := 0; r < rounds; r++ {
		l, err := m.Acquire(ctx)
		if err != nil {
			return err
		}
		if n := inside.Add(1); n != 1 {
			return fmt.Errorf("round %d: %d holders inside", r, n)
		}
		ep := l.Epoch()
		if _, err := connlink.Of(ep).Create(ctx, guard, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			return fmt.Errorf("round %d: guard node: %w", r, err) // ErrNodeExists: two holders
		}
		_, seq, _ := locknode.SplitSeq(l.Path())
		record(seq)
		if err := connlink.Of(ep).Delete(ctx, guard, -1); err != nil {
			return fmt.Errorf("round %d: guard node: %w", r, err)
		}
		inside.Add(-1)
		if err := m.Release(ctx); err != nil {
			return err
		}
	}
	return nil
}

// TestFIFO: waiters that queued one after another are granted in that order.
func TestFIFO(t *testing.T) {
	const waiters = 5
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	hs := testzk.Connect(t, c.Servers())
	holder := newMutex(t, hs, path)
	ctx := testzk.Ctx(t, time.Minute)
	_, err := holder.Acquire(ctx)
	require.NoError(t, err)

	order := make(chan int, waiters)
	for i := 0; i < waiters; i++ {
		m := newMutex(t, testzk.Connect(t, c.Servers()), path)
		go func() {
			if _, err := m.Acquire(ctx); err != nil {
				order <- -1
				return
			}
			order <- i
			_ = m.Release(ctx)
		}()
		testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, hs, path)) == i+2 }, "waiter %d queued", i)
	}
	require.NoError(t, holder.Release(ctx))
	for i := 0; i < waiters; i++ {
		assert.Equal(t, i, <-order)
	}
}

// TestTryAcquireExactlyOne: of N sessions trying at once, exactly one wins
// and the others leave no node.
func TestTryAcquireExactlyOne(t *testing.T) {
	const n = 10
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	ms := make([]*mutex.InterProcessMutex, n)
	for i := range ms {
		ms[i] = newMutex(t, testzk.Connect(t, c.Servers()), path)
	}
	// Make the lock path first so that every try is a single create.
	_, err := ms[0].Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, ms[0].Release(ctx))

	start, release := make(chan struct{}), make(chan struct{})
	type result struct {
		ok  bool
		err error
	}
	results := make(chan result, n)
	released := make(chan error, n)
	for _, m := range ms {
		go func() {
			<-start
			_, ok, err := m.TryAcquire(ctx)
			results <- result{ok, err}
			if ok { // only the goroutine that holds it may release it
				<-release
				released <- m.Release(ctx)
			}
		}()
	}
	close(start)
	winners := 0
	for range ms {
		r := <-results
		require.NoError(t, r.err)
		if r.ok {
			winners++
		}
	}
	require.Equal(t, 1, winners)
	s := testzk.Connect(t, c.Servers())
	assert.Len(t, testzk.Children(t, s, path), 1, "losers left no node")
	close(release)
	require.NoError(t, <-released)
	assert.Empty(t, testzk.Children(t, s, path))
}
