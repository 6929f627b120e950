package mutex_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func newHandoffLock(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	m, err := mutex.New(s, path, lock.WithLocalHandoff(4, time.Second))
	if err != nil {
		t.Fatalf("mutex.New(%q): %v", path, err)
	}
	return locktest.Pin(t, m)
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
		_, err := mutex.New(s, "/a", o)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	}
	_, err := mutex.New(s, "/a", lock.WithLocalHandoff(3, time.Second))
	assert.NoError(t, err)
}

// fenced is a resource that keeps the greatest fence it has seen and
// refuses any that is not above it (stricter than conn.Fence's doc asks:
// each grant writes once here).
type fenced struct {
	mu   sync.Mutex // guards the fields below
	last conn.Fence
	seen []conn.Fence
}

func (f *fenced) write(g conn.Fence) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) > 0 && g.Compare(f.last) <= 0 {
		return errors.New("fence " + g.String() + " not above " + f.last.String())
	}
	f.last = g
	f.seen = append(f.seen, g)
	return nil
}

// hammer runs n goroutines on m, each acquiring rounds times; every grant
// writes its fence into res.
func hammer(ctx context.Context, t *testing.T, m *mutex.InterProcessMutex, n, rounds int, res *fenced, grants *atomic.Int64) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := m.Acquire(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				f, err := l.Fence(ctx)
				if err == nil {
					err = res.write(f)
				}
				if grants != nil {
					grants.Add(1)
				}
				if rerr := m.Release(ctx); err == nil {
					err = rerr
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// Fences strictly grow across local and remote grants: two sessions, each
// with goroutines sharing its contender, write into one fenced resource.
// Local handoffs happened (a pass above 0) and so did remote ones (more
// than one node per session).
func TestLocalHandoffFencesGrow(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 2*time.Minute)
	const goroutines, rounds, passes = 4, 10, 3
	res := &fenced{}
	var wg sync.WaitGroup
	errs := make(chan []error, 2)
	for range 2 {
		s := testzk.Connect(t, c.Servers())
		m, err := mutex.New(s, path, lock.WithLocalHandoff(passes, 0))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- hammer(ctx, t, m, goroutines, rounds, res, nil)
		}()
	}
	wg.Wait()
	close(errs)
	for es := range errs {
		for _, err := range es {
			require.NoError(t, err)
		}
	}
	require.Len(t, res.seen, 2*goroutines*rounds)
	nodes, maxPass := map[int64]bool{}, int64(0)
	for _, f := range res.seen {
		nodes[f.Zxid] = true
		maxPass = max(maxPass, f.Pass)
		assert.LessOrEqual(t, f.Pass, int64(passes))
	}
	assert.Positive(t, maxPass, "no local handoff happened")
	assert.Greater(t, len(nodes), 2, "no remote handoff happened")
}

// Goroutines of one session hand the lock over locally: the requests per
// cycle fall far below the two commits (create, delete) of a cycle
// without handoff, and the node count of the path never exceeds one. (Each
// grant's Fence reads the node: those reads are not counted.)
func TestLocalHandoffSavesRequests(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 2*time.Minute)
	m, err := mutex.New(s, path, lock.WithLocalHandoff(100, 0))
	require.NoError(t, err)
	const goroutines, rounds = 10, 20
	requests := func() int64 { return testzk.Requests(s) - connlink.Of(s).Stats().Requests[metrics.OpExists] }
	before := requests()
	for _, err := range hammer(ctx, t, m, goroutines, rounds, &fenced{}, nil) {
		require.NoError(t, err)
	}
	used := requests() - before
	t.Logf("%d requests for %d grants", used, goroutines*rounds)
	assert.Less(t, used, int64(goroutines*rounds/2))
	assert.Empty(t, testzk.Children(t, s, path))
}

// holdAndQueue makes goroutine 1 acquire, goroutine 2 queue behind it in
// the process, and goroutine 1 release: goroutine 2 then holds the node's
// second grant. It returns the first lease, the second, and a function
// that makes goroutine 2 release.
func holdAndQueue(ctx context.Context, t *testing.T, m *mutex.InterProcessMutex) (first, second *conn.Lease, release func() error) {
	t.Helper()
	first, err := m.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan *conn.Lease, 1)
	rel := make(chan chan error)
	go func() {
		l, err := m.Acquire(ctx)
		if err != nil {
			got <- nil
			return
		}
		got <- l
		done := <-rel
		done <- m.Release(ctx)
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return mutex.LocalWaiters(m) == 1 }, "goroutine 2 does not queue")
	require.NoError(t, m.Release(ctx))
	second = <-got
	require.NotNil(t, second)
	return first, second, func() error {
		done := make(chan error, 1)
		rel <- done
		return <-done
	}
}

// A released local holder's guarded write is refused while the node stays
// for the next local holder; the next holder's passes; Fence grows (the
// node's czxid, the pass above).
func TestLocalHandoffReleasedGuardedWriteRefused(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m, err := mutex.New(s, path, lock.WithLocalHandoff(10, 0))
	require.NoError(t, err)

	l1, err := m.Acquire(ctx)
	require.NoError(t, err)
	f1, err := l1.Fence(ctx)
	require.NoError(t, err)
	got := make(chan *conn.Lease, 1)
	relNow := make(chan struct{})
	relErr := make(chan error, 1)
	go func() {
		l, err := m.Acquire(ctx)
		if err != nil {
			got <- nil
			relErr <- err
			return
		}
		got <- l
		<-relNow
		relErr <- m.Release(ctx)
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return mutex.LocalWaiters(m) == 1 }, "goroutine 2 does not queue")
	reqs := testzk.Requests(s)
	require.NoError(t, m.Release(ctx))
	l2 := <-got
	require.NotNil(t, l2)
	assert.Equal(t, reqs, testzk.Requests(s), "a local handoff sent requests")
	assert.Equal(t, l1.Path(), l2.Path(), "the node was not handed over locally")

	target := path + "-data"
	_, err = l1.GuardedWrite(ctx, &zk.CreateRequest{Path: target, Data: []byte("stale"), Acl: zk.WorldACL(zk.PermAll)})
	assert.ErrorIs(t, err, conn.ErrLeaseLost, "a released local holder wrote")
	_, err = l1.Fence(ctx)
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	select {
	case <-l1.Lost():
	default:
		t.Fatal("released lease not lost")
	}
	_, err = l2.GuardedWrite(ctx, &zk.CreateRequest{Path: target, Data: []byte("fresh"), Acl: zk.WorldACL(zk.PermAll)})
	require.NoError(t, err)
	f2, err := l2.Fence(ctx)
	require.NoError(t, err)
	assert.Equal(t, conn.Fence{Zxid: f1.Zxid, Pass: 1}, f2)
	assert.Equal(t, 1, f2.Compare(f1), "%v then %v", f1, f2)
	close(relNow)
	require.NoError(t, <-relErr)
	assert.Empty(t, testzk.Children(t, s, path))
}

// Lost reaches the local holder of a handed-over grant when the session
// expires, and the next acquire starts over in the new epoch.
func TestLocalHandoffLostOnExpiry(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m, err := mutex.New(s, path, lock.WithLocalHandoff(10, 0))
	require.NoError(t, err)
	l1, l2, release := holdAndQueue(ctx, t, m)
	require.Equal(t, l1.Path(), l2.Path(), "not a local handoff")
	lost1, lost2 := l1.Lost(), l2.Lost()
	<-lost1 // released
	ep := testzk.Epoch(t, s)
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
	select {
	case <-lost2:
	case <-ctx.Done():
		t.Fatal("the local holder was not told its lease was lost")
	}
	assert.ErrorIs(t, l2.Err(), conn.ErrLeaseLost)
	_, err = l2.GuardedWrite(ctx, &zk.CreateRequest{Path: path + "-x", Acl: zk.WorldACL(zk.PermAll)})
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	require.NoError(t, release())
	l3, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, ep.SessionID(), l3.Epoch().SessionID())
	require.NoError(t, m.Release(ctx))
}

// A local waiter that gives up leaves nothing: no node (the path has the
// holder's only), no watch (its coming sets one, on the holder's node, so
// that a deletion of the node stops the handoff; the release's delete
// consumes it), and the holder's release deletes the node (nobody is
// waiting for it).
func TestLocalHandoffCancelledWaiter(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m, err := mutex.New(s, path, lock.WithLocalHandoff(10, 0))
	require.NoError(t, err)
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	require.Len(t, testzk.Children(t, s, path), 1)
	reqs, watches := testzk.Requests(s), testzk.WatchesSet(s)

	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.Acquire(wctx)
		done <- err
	}()
	err = <-done
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	testzk.Watching(t, s, watches)
	assert.Equal(t, reqs+1, testzk.Requests(s), "a local waiter sent requests beyond the node's watch")
	assert.Equal(t, watches+1, testzk.WatchesSet(s), "a local waiter set watches beyond the node's")
	require.Len(t, testzk.Children(t, s, path), 1)
	require.NoError(t, m.Release(ctx))
	assert.Empty(t, testzk.Children(t, s, path))
	assert.Empty(t, testzk.DataWatches(t, c, testzk.Epoch(t, s).SessionID()), "a watch outlives the node")
}

// The cross-process bound: while goroutines of one session hammer the lock
// with WithLocalHandoff(passes, 0), a contender on another session is
// granted after at most passes+1 grants of the first session counted from
// the moment its node is queued.
func TestLocalHandoffCrossProcessBound(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 2*time.Minute)
	const goroutines, passes = 8, 5
	sa, sb := testzk.Connect(t, c.Servers()), testzk.Connect(t, c.Servers())
	ma, err := mutex.New(sa, path, lock.WithLocalHandoff(passes, 0))
	require.NoError(t, err)
	mb, err := mutex.New(sb, path, lock.WithLocalHandoff(passes, 0))
	require.NoError(t, err)

	var grants atomic.Int64
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, err := range hammer(hctx, t, ma, goroutines, 1<<30, &fenced{}, &grants) {
			if err != nil && hctx.Err() == nil {
				t.Errorf("hammer: %v", err)
			}
		}
	}()
	testzk.Eventually(t, 30*time.Second, func() bool { return grants.Load() > 3*passes }, "the hammer does not run")

	for round := range 5 {
		got := make(chan error, 1)
		at := make(chan int64, 1)
		go func() {
			_, err := mb.Acquire(ctx)
			at <- grants.Load()
			if err == nil {
				err = mb.Release(ctx)
			}
			got <- err
		}()
		// B's node is queued once the path has two nodes of which one is not
		// A's current one; count A's grants from the first listing that shows
		// B's node.
		from := queuedAt(ctx, t, sb, path, got, &grants)
		require.NoError(t, <-got)
		n := <-at - from
		t.Logf("round %d: %d grants of the other session after our node was queued", round, n)
		assert.LessOrEqual(t, n, int64(passes+1))
	}
	stop()
	wg.Wait()
}

// queuedAt polls path until a node of session s is there (or got says the
// acquire returned), and returns grants at that moment.
func queuedAt(ctx context.Context, t *testing.T, s *conn.Session, path string, got chan error, grants *atomic.Int64) int64 {
	t.Helper()
	ep := testzk.Epoch(t, s)
	for {
		names, _, err := s.Children(ctx, path)
		require.NoError(t, err)
		for _, n := range names {
			ok, st, err := s.Exists(ctx, path+"/"+n)
			require.NoError(t, err)
			if ok && st.EphemeralOwner == ep.SessionID() {
				return grants.Load()
			}
		}
		select {
		case err := <-got:
			got <- err
			return grants.Load()
		default:
		}
	}
}

// A local waiter gives up when its session is closed, as a waiter queued
// in ZooKeeper does: the error matches conn.ErrClosed.
func TestLocalHandoffWaiterSessionClosed(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m, err := mutex.New(s, path, lock.WithLocalHandoff(10, 0))
	require.NoError(t, err)
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctx)
		done <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return mutex.LocalWaiters(m) == 1 }, "the waiter does not queue")
	require.NoError(t, s.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, conn.ErrClosed)
	case <-ctx.Done():
		t.Fatal("the local waiter still waits on a closed session")
	}
	assert.Zero(t, mutex.LocalWaiters(m))
}

// The time budget bounds a node's stay in the process: with a pass bound
// that is never reached, holds of 2 ms and a 20 ms budget, the node goes
// back to ZooKeeper many times.
func TestLocalHandoffBudget(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 2*time.Minute)
	m, err := mutex.New(s, path, lock.WithLocalHandoff(1_000_000, 20*time.Millisecond))
	require.NoError(t, err)
	const goroutines, rounds = 4, 50
	res := &fenced{}
	var wg sync.WaitGroup
	for range goroutines {
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
				if err == nil {
					err = res.write(f)
				}
				if err != nil {
					t.Errorf("fence: %v", err)
				}
				time.Sleep(2 * time.Millisecond) // the critical section's work
				if err := m.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	nodes := map[int64]bool{}
	for _, f := range res.seen {
		nodes[f.Zxid] = true
	}
	t.Logf("%d grants on %d nodes", len(res.seen), len(nodes))
	assert.GreaterOrEqual(t, len(nodes), 3, "the budget did not send the node back")
}
