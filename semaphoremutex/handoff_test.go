package semaphoremutex_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func newHandoffLock(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	m, err := semaphoremutex.New(s, path, lock.WithLocalHandoff(4, time.Second))
	if err != nil {
		t.Fatalf("semaphoremutex.New(%q): %v", path, err)
	}
	return m
}

// The mutex with local handoff passes the shared contract, FIFO included,
// and the shared faults and deadlines.
func TestContractLocalHandoff(t *testing.T) {
	t.Run("Contract", func(t *testing.T) {
		locktest.Run(t, newHandoffLock, append(suiteOptions(t), locktest.WithFIFO(true))...)
	})
	t.Run("Faults", func(t *testing.T) { locktest.RunFaults(t, newHandoffLock, suiteOptions(t)...) })
	t.Run("Deadlines", func(t *testing.T) { locktest.RunDeadlines(t, newHandoffLock, suiteOptions(t)...) })
}

func TestLocalHandoffOptions(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	for _, o := range []lock.Option{lock.WithLocalHandoff(0, 0), lock.WithLocalHandoff(1, -time.Second)} {
		_, err := semaphoremutex.New(s, "/a", o)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	}
}

// An option a constructor cannot honour is an error, not ignored: the
// in-process handoff is the Mutex's, and a Semaphore (several leases per
// handle) has no place for it.
func TestNewSemaphoreRefusesLocalHandoff(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	sem, err := semaphoremutex.NewSemaphore(s, "/a", 2, lock.WithLocalHandoff(3, time.Second))
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "lock.WithLocalHandoff: not an option of semaphoremutex.NewSemaphore")
	assert.Nil(t, sem)
	_, err = semaphoremutex.New(s, "/a", lock.WithLocalHandoff(3, time.Second))
	assert.NoError(t, err, "the Mutex honours it")
}

// Several handles on one session and path share one contender: the lease
// passes from handle to handle without a request, a released handle's
// guarded write is refused, fences grow strictly, and Lost reaches the
// holding handle when the session expires.
func TestLocalHandoffHandles(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "mutex")
	ctx := testzk.Ctx(t, time.Minute)
	opt := lock.WithLocalHandoff(10, 0)
	m1, m2 := newMutex(t, s, path, opt), newMutex(t, s, path, opt)

	l1, err := m1.Acquire(ctx)
	require.NoError(t, err)
	f1, err := l1.Fence(ctx)
	require.NoError(t, err)
	got := make(chan *conn.Lease, 1)
	go func() {
		l, err := m2.Acquire(ctx)
		if err != nil {
			t.Errorf("m2.Acquire: %v", err)
		}
		got <- l
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return semaphoremutex.LocalWaiters(m1) == 1 }, "m2 does not queue")
	reqs := testzk.Requests(s)
	require.NoError(t, m1.Release(ctx))
	l2 := <-got
	require.NotNil(t, l2)
	assert.Equal(t, reqs, testzk.Requests(s), "a local handoff sent requests")
	assert.Equal(t, l1.Path(), l2.Path())
	assert.ErrorIs(t, m1.Release(ctx), lock.ErrNotHeld)
	assert.NoError(t, l2.Err(), "m2 holds")

	_, err = l1.GuardedWrite(ctx, &zk.CreateRequest{Path: path + "-x", Acl: zk.WorldACL(zk.PermAll)})
	assert.ErrorIs(t, err, conn.ErrLeaseLost, "a released handle wrote")
	f2, err := l2.Fence(ctx)
	require.NoError(t, err)
	assert.Equal(t, conn.Fence{Zxid: f1.Zxid, Pass: 1}, f2)
	assert.ErrorIs(t, m1.Release(ctx), lock.ErrNotHeld)

	lost := l2.Lost()
	ep := testzk.Epoch(t, s)
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("the holding handle was not told its lease was lost")
	}
	require.NoError(t, m2.Release(ctx))
	l3, err := m1.Acquire(ctx)
	require.NoError(t, err)
	f3, err := l3.Fence(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, f3.Compare(f2))
	require.NoError(t, m1.Release(ctx))
}

// Many handles of one session hammer the mutex: far fewer requests than
// grants, every fence above the one before.
func TestLocalHandoffHammer(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "mutex")
	ctx := testzk.Ctx(t, 2*time.Minute)
	const handles, rounds = 10, 20
	var (
		mu   sync.Mutex // guards last, n
		last conn.Fence
		n    int
		wg   sync.WaitGroup
	)
	// Each grant's Fence reads the node: those reads are not counted.
	requests := func() int64 { return testzk.Requests(s) - connlink.Of(s).Stats().Requests[metrics.OpExists] }
	before := requests()
	for range handles {
		m := newMutex(t, s, path, lock.WithLocalHandoff(100, 0))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := m.Acquire(ctx)
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				f, err := l.Fence(ctx)
				mu.Lock()
				if err != nil || (n > 0 && f.Compare(last) <= 0) {
					t.Errorf("fence %v after %v: %v", f, last, err)
				}
				last = f
				n++
				mu.Unlock()
				if err := m.Release(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	used := requests() - before
	t.Logf("%d requests for %d grants", used, handles*rounds)
	assert.Equal(t, handles*rounds, n)
	assert.Less(t, used, int64(handles*rounds/2))
}

// TestLocalHandoffReleaseWaitsForGuardedWrites: a guarded write through
// the holder's lease is in flight (answers are slow) when another goroutine
// releases the handle while a local waiter is queued. The release waits
// for the write's answer, so the write reaches the server before the next
// local grant exists, and a guarded write that starts during the release
// is refused.
func TestLocalHandoffReleaseWaitsForGuardedWrites(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	data := testzk.Path(t, c, "data")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	obs := testzk.Connect(t, c.Servers())
	ctx := testzk.Ctx(t, time.Minute)
	require.NoError(t, connlink.Of(testzk.Epoch(t, obs)).CreateParents(ctx, data))
	_, err := obs.Create(ctx, data, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	opt := lock.WithLocalHandoff(10, 0)
	m, next := newMutex(t, s, path, opt), newMutex(t, s, path, opt)

	first, err := m.Acquire(ctx)
	require.NoError(t, err)
	granted := make(chan *conn.Lease, 1)
	go func() {
		l, err := next.Acquire(ctx)
		assert.NoError(t, err)
		granted <- l
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return semaphoremutex.LocalWaiters(m) == 1 }, "a local waiter")

	p.SetLatency(300 * time.Millisecond)
	before := connlink.Of(s).Stats().Requests[metrics.OpMulti]
	written := make(chan error, 1)
	go func() {
		_, err := first.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("first"), Version: -1})
		written <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return connlink.Of(s).Stats().Requests[metrics.OpMulti] > before }, "the guarded write in flight")
	require.NoError(t, m.Release(ctx))
	b, _, err := obs.Get(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, "first", string(b), "the write was applied when the release returned")
	p.SetLatency(0)
	assert.NoError(t, <-written, "the write started while the grant was held")
	_, err = first.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("late"), Version: -1})
	assert.ErrorIs(t, err, conn.ErrLeaseLost, "a released grant's write")
	second := <-granted
	require.NotNil(t, second)
	assert.Equal(t, first.Path(), second.Path(), "handed over in the process")
	_, err = second.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("second"), Version: -1})
	require.NoError(t, err)
	b, _, err = obs.Get(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, "second", string(b), "the writes in grant order")
	require.NoError(t, next.Release(ctx))
}
