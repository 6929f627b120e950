package queue

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// liveHeap is the heap in use after a full collection (goroutine stacks
// are not in it).
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// heapPerWaiter queues n waiters of one session behind a holder of
// another, each through a handle of its own (a Queue: they share listings
// all the same), waits until every one of them watches its node, and
// returns the live heap they cost, per waiter, and the listings they sent,
// per waiter. The waiters are cancelled before it returns.
//
// A waiter granted while the holder's node is still on the server (a
// bystander session sees it after the grant) is two holders. A grant
// after the holder's node went is not: on a loaded machine, with one
// session's thousands of requests in flight, a session's sync can go
// unanswered for longer than the quorum timer allows (half the session
// timeout), and the holder's session then ends, its node with it. The
// sessions get a long timeout (c must allow it), and if the holder is
// lost all the same, the measurement is void and said to be so at once.
func heapPerWaiter(t *testing.T, c *zktest.Cluster, hcfg, cfg Config, n int) (heap, listings float64) {
	t.Helper()
	path := lockPath(t, c)
	lg := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)) // session losses
	long := conn.WithSessionTimeout(scaleSessionTimeout)
	holder, err := New(connect(t, c.Servers(), long, conn.WithLogger(lg.Named("holder"))), path, hcfg, Options{})
	require.NoError(t, err)
	ws := connect(t, c.Servers(), long, conn.WithLogger(lg.Named("waiters")))
	by := connect(t, c.Servers(), long) // the bystander: is the holder's node there?
	ctx := ctxTimeout(t, 5*time.Minute)
	hl, err := holder.Acquire(ctx)
	require.NoError(t, err)

	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		assert.NoError(t, holder.Release(ctx, hl))
	}()
	watches := WatchesSet(ws)
	lists := connlink.Of(ws).Stats().Requests[metrics.OpChildren]
	before := liveHeap()
	start := time.Now()
	var lostOnce sync.Once
	var granted, checked, twice atomic.Int64 // waiters granted, grants checked, two holders
	for range n {
		q, err := New(ws, path, cfg, Options{})
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := q.Acquire(wctx)
			if err != nil {
				return
			}
			granted.Add(1)
			at := time.Since(start)
			defer checked.Add(1)
			there, st, err := by.Exists(ctx, hl.Path())
			switch {
			case err != nil:
				t.Errorf("a waiter was granted %s after %v; the bystander could not tell whether the holder's node is there: %v", l.Path(), at, err)
			case there:
				twice.Add(1)
				t.Errorf("two holders: a waiter was granted %s after %v while the holder's node %s is on the server (owner 0x%x; holder's lease: %v)",
					l.Path(), at, hl.Path(), st.EphemeralOwner, hl.Err())
			default:
				lostOnce.Do(func() {
					t.Logf("a waiter was granted %s after %v, the holder's node gone (holder's lease: %v)", l.Path(), at, hl.Err())
				})
			}
		}()
	}
	// A waiter granted never watches: stop waiting at the first grant.
	eventually(t, 4*time.Minute, func() bool {
		switch g := granted.Load(); {
		case twice.Load() > 0:
			t.Fatalf("two holders (above), after %v", time.Since(start))
		case g == 0:
		case checked.Load() < g || hl.Err() == nil:
			// Wait for the bystander's checks of the grants, and for the
			// holder's session to say what happened to it.
		default:
			t.Fatalf("the holder's lease was lost after %v (%v), and its node is gone: %d waiters granted and %d of %d watching. "+
				"Not two holders: the holder's session ended (under load, its quorum timer: see the warnings above); the measurement is void",
				time.Since(start), hl.Err(), g, WatchesSet(ws)-watches, n)
		}
		return WatchesSet(ws)-watches >= int64(n)
	}, "every waiter watching")
	queued := time.Since(start)
	// Signed: garbage of the run before (a closed session's last goroutines)
	// may be freed meanwhile, and a wrapped difference is no measurement.
	heap = float64(int64(liveHeap())-int64(before)) / float64(n)
	listings = float64(connlink.Of(ws).Stats().Requests[metrics.OpChildren]-lists) / float64(n)
	t.Logf("%d waiters: queued in %v, %.0f bytes of heap and %.3f listings per waiter", n, queued.Round(time.Millisecond), heap, listings)
	return heap, listings
}

// scaleSessionTimeout is the session timeout of heapPerWaiter's sessions:
// the quorum timer then allows a sync 15 s to be answered.
const scaleSessionTimeout = 30 * time.Second

// WatchesSet is testzk's, under a name that does not clash with the
// package's.
var WatchesSet = watchesSet

// TestHeapPerWaiterDoesNotGrowWithQueue is the guard against waiters that
// keep the whole queue while they wait (total memory quadratic in the
// queue's length): the live heap per waiter, measured at two queue lengths
// ten times apart, must not grow with the length. A waiter that kept its
// listing cost about 70 bytes per node before its own, so the longer
// queue's per-waiter cost was several times the shorter one's (11 KB and
// 140 KB for writers). It also guards the shared listings: waiters of one
// session queued at once send far fewer listings than there are of them
// (each sent one, or two, when every waiter listed on its own: queueing
// was quadratic in bytes).
func TestHeapPerWaiterDoesNotGrowWithQueue(t *testing.T) {
	small, large := 200, 2000
	if testing.Short() {
		small, large = 100, 1000
	}
	mutex := Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First}
	writer := Config{Schema: locknode.HostKindSchema{Host: "h", Kind: "W"}, Predicate: First}
	reader := Config{Schema: locknode.HostKindSchema{Host: "h", Kind: "R"}, Predicate: NoneBefore("W")}
	// A server of its own, whose tickTime allows sessions of
	// scaleSessionTimeout (the shared one's allows 10 s).
	c := zktest.New(t, zktest.WithTickTime(2*time.Second))
	for _, tc := range []struct {
		name           string
		holder, waiter Config
	}{
		{"mutex", mutex, mutex},
		{"writers", writer, writer},
		{"readers behind a writer", writer, reader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := heapPerWaiter(t, c, tc.holder, tc.waiter, small)
			b, lists := heapPerWaiter(t, c, tc.holder, tc.waiter, large)
			assert.Less(t, b, 2*a+512, fmt.Sprintf("heap per waiter grows with the queue: %.0f B at %d waiters, %.0f B at %d", a, small, b, large))
			assert.Less(t, lists, 0.5, "listings per waiter: the waiters of one session do not share them")
		})
	}
}

// TestHeldLeasesCostNoGoroutine: a session holding many distinct locks
// runs no goroutine per held lock (a lease starts one only when someone
// waits on its Lost or Revoked).
func TestHeldLeasesCostNoGoroutine(t *testing.T) {
	const n = 300
	c := cluster(t)
	s := connect(t, c.Servers())
	ctx := ctxTimeout(t, 2*time.Minute)
	base := lockPath(t, c)
	qs := make([]*Queue, n)
	for i := range qs {
		qs[i] = mutexQueue(t, s, fmt.Sprintf("%s/%d", base, i))
	}
	// One acquire first, so that the session's own goroutines are running.
	l, err := qs[0].Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, qs[0].Release(ctx, l))

	g0 := runtime.NumGoroutine()
	h0 := liveHeap()
	leases := make([]*conn.Lease, n)
	for i, q := range qs {
		leases[i], err = q.Acquire(ctx)
		require.NoError(t, err)
	}
	g := runtime.NumGoroutine() - g0
	per := float64(liveHeap()-h0) / n
	t.Logf("%d held locks: %d more goroutines, %.0f bytes of heap each", n, g, per)
	assert.Less(t, g, n/10, "goroutines per held lock")
	for i, q := range qs {
		require.NoError(t, q.Release(ctx, leases[i]))
	}
}
