package attack_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestArmedLeaseCostsThreeGoroutines checks docs/benchmarks.md's "A held
// lease runs no goroutine until someone waits on its Lost or Revoked; then
// three": one goroutine of one session holds 60 mutexes; calling Lost on
// each must add at most three goroutines per lease. Found by an outside
// user: the doc said "a goroutine", and it was 3.00 per lease.
func TestArmedLeaseCostsThreeGoroutines(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 25*time.Second)
	const n = 60
	ms := mutexes(f.Session(), f.Path("r2-armed"), n)
	leases := acquireAll(t, ctx, ms)
	t.Cleanup(func() {
		for _, m := range ms {
			_ = m.Release(ctx)
		}
	})
	before := runtime.NumGoroutine()
	for _, l := range leases {
		_ = l.Lost()
	}
	waitFor(t, 10*time.Second, "every node watched", func() bool {
		return watched(f, 0, leases[0].Path()) && watched(f, 0, leases[n-1].Path())
	})
	after := steadyGoroutines(t)
	per := float64(after-before) / n
	t.Logf("goroutines: %d before arming Lost on %d leases, %d after: %.2f per lease", before, n, after, per)
	if per > 3.1 {
		t.Fatalf("arming Lost costs %.2f goroutines per lease, the docs say three", per)
	}
}

// mutexes makes n mutexes on s, on paths dir/m0, dir/m1, ...
func mutexes(s *conn.Session, dir string, n int) []*mutex.InterProcessMutex {
	ms := make([]*mutex.InterProcessMutex, n)
	for i := range ms {
		ms[i], _ = mutex.New(s, fmt.Sprintf("%s/m%d", dir, i))
	}
	return ms
}

// acquireAll takes every mutex of ms and returns their leases.
func acquireAll(t *testing.T, ctx context.Context, ms []*mutex.InterProcessMutex) []*conn.Lease {
	t.Helper()
	leases := make([]*conn.Lease, len(ms))
	for i, m := range ms {
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		leases[i] = l
	}
	return leases
}

// steadyGoroutines waits until the goroutine count stays the same for
// 100 ms, and returns it.
func steadyGoroutines(t *testing.T) int {
	t.Helper()
	var n int
	waitFor(t, 5*time.Second, "goroutine count steady", func() bool {
		a := runtime.NumGoroutine()
		time.Sleep(100 * time.Millisecond)
		n = runtime.NumGoroutine()
		return a == n
	})
	return n
}

// TestHeldLeasesCostNoGoroutineAndArmedOnesEnd checks CHANGELOG's
// "A held lock cost a goroutine: a lease starts one only when someone waits
// on its Lost or Revoked" and the brief's "no orphan goroutine or watch"
// (conn: "A watch nobody waits on any more is removed from the server"):
// one goroutine of one session holds 60 mutexes at once, the goroutine
// count must not grow by one per lease; Lost is then armed on every lease
// (each sets a watch on its node, seen with wchp); after every Release,
// with the session still open, the goroutine count comes back and no watch
// remains on any of the nodes.
func TestHeldLeasesCostNoGoroutineAndArmedOnesEnd(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 28*time.Second)
	const n = 60
	ms := mutexes(f.Session(), f.Path("r2-cost"), n)
	// Warm up the session's own goroutines with one acquire/release.
	_, err := ms[0].Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, ms[0].Release(ctx))
	time.Sleep(200 * time.Millisecond) // let the warm-up's goroutines settle; counted, not relied on
	base := runtime.NumGoroutine()
	leases := acquireAll(t, ctx, ms)
	held := runtime.NumGoroutine()
	t.Logf("goroutines: %d before, %d with %d leases held", base, held, n)
	if held-base >= n/2 {
		t.Errorf("%d goroutines for %d held leases", held-base, n)
	}
	for _, l := range leases {
		_ = l.Lost()
	}
	waitFor(t, 10*time.Second, "a watch on every held node", func() bool {
		return watched(f, 0, leases[n-1].Path()) && watched(f, 0, leases[0].Path())
	})
	armed := runtime.NumGoroutine()
	t.Logf("goroutines with Lost armed on all: %d", armed)
	for _, m := range ms {
		require.NoError(t, m.Release(ctx))
	}
	for _, l := range leases {
		recv(t, l.Lost(), 5*time.Second, "Lost of %s open after Release", l.Path())
	}
	waitFor(t, 10*time.Second, "goroutines back to the count before the holds", func() bool {
		return runtime.NumGoroutine() <= base+2
	})
	for _, l := range leases {
		if watched(f, 0, l.Path()) {
			t.Errorf("watch left on released node %s", l.Path())
		}
	}
}

// TestWaiterGoroutineCost checks docs/benchmarks.md's "Every waiter
// runs two goroutines after the change as before: the caller's, and conn's
// forwarder of its one watch": 40 goroutines of one session wait on one
// mutex held by another session; once each waiter's watch is set (the
// server's watch count), the process must run at most about two
// goroutines per waiter (we allow 2.5).
func TestWaiterGoroutineCost(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 25*time.Second)
	path := f.Path("r2-wcost/lock")
	sA := f.Session()
	b := f.mutexHeld(ctx, path) // B, another session, holds
	m, _ := mutex.New(sA, path)
	base := runtime.NumGoroutine()
	const n = 40
	wctx, cancel := context.WithCancel(ctx)
	wg := spawn(n, func(int) {
		if _, err := m.Acquire(wctx); err == nil {
			_ = m.Release(ctx)
		}
	})
	waitFor(t, 10*time.Second, "every waiter queued and watching", func() bool {
		if len(children(f.Raw(), path)) != n+1 {
			return false
		}
		mm, err := f.Mntr(ctx, 0)
		return err == nil && mm["zk_watch_count"] == "40"
	})
	now := steadyGoroutines(t)
	per := float64(now-base) / n
	t.Logf("goroutines: %d before, %d with %d waiters: %.2f per waiter", base, now, n, per)
	cancel()
	wg.Wait()
	_ = b.release()
	if per > 2.5 {
		t.Fatalf("%.2f goroutines per waiter; the docs say two", per)
	}
}

// TestMultiLockLostGoroutinesEnd checks multilock's "Lost closes when
// any lease is lost or on the first Release, even one that leaves locks
// held; the one goroutine behind it ends then" and the brief's "no orphan
// goroutine": a MultiLock over a mutex and a semaphore mutex with local
// handoff, Lost armed, released; the goroutine count must come back to
// where it was, with the session still open. Also logs what arming costs.
func TestMultiLockLostGoroutinesEnd(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 20*time.Second)
	s := f.Session()
	a, _ := mutex.New(s, f.Root()+"/r2-ml/a", lock.WithLocalHandoff(3, 0))
	b, _ := semaphoremutex.New(s, f.Root()+"/r2-ml/b", lock.WithLocalHandoff(3, 0))
	ml, err := multilock.New(a, b)
	require.NoError(t, err)
	// Warm-up: the session's own goroutines.
	_, err = ml.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, ml.Release(ctx))
	time.Sleep(200 * time.Millisecond) // settle; the check below waits on the count itself
	base := runtime.NumGoroutine()
	_, err = ml.Acquire(ctx)
	require.NoError(t, err)
	held := runtime.NumGoroutine()
	lost := ml.Lost()
	time.Sleep(300 * time.Millisecond) // let the watches be set; counted, not relied on
	armed := runtime.NumGoroutine()
	t.Logf("goroutines: %d before, %d held, %d with Lost armed", base, held, armed)
	require.NoError(t, ml.Release(ctx))
	recv(t, lost, 5*time.Second, "Lost open after Release")
	waitFor(t, 10*time.Second, "goroutines back after the release", func() bool { return runtime.NumGoroutine() <= base })
}
