package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestSemaphoreLeaseDataChangeIsNoRelease checks semaphoremutex/doc.go:
// "At most N holders among all processes using the path (Curator's
// InterProcessSemaphoreV2 ... included)" and "Otherwise it keeps the
// internal mutex and waits, with a data watch on N of the lease nodes, until
// one is deleted": a raw client takes both leases of a 2-lease semaphore the
// way Curator does (internal lock node, lease node, internal lock node
// deleted), with world-writable nodes as Curator makes them. Our waiter
// watches the two lease nodes; the raw client changes the data of both
// (also to sealed-looking data). The waiter must not get a lease until one
// lease node is deleted.
func TestSemaphoreLeaseDataChangeIsNoRelease(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	zc := f.Raw()
	path := f.Path("sem-foreign")
	ensure(t, zc, zkWorld, f.Root(), path, path+"/locks", path+"/leases")
	var leases []string
	for i := 0; i < 2; i++ {
		id := fmt.Sprintf("0b5e55ed-0000-4000-8000-00000000000%d", i)
		lk, err := zc.Create(path+"/locks/_c_"+id+"-lock-", []byte("127.0.0.1"), zkEphemeralSequential, zkWorld)
		require.NoError(t, err)
		ls, err := zc.Create(path+"/leases/_c_"+id+"-lease-", []byte("127.0.0.1"), zkEphemeralSequential, zkWorld)
		require.NoError(t, err)
		require.NoError(t, zc.Delete(lk, -1))
		leases = append(leases, ls)
	}
	w := hold(ctx, newLocker(t, "semaphore-2", f.Session(), path, 0))
	waitFor(t, 10*time.Second, "the waiter's watches on both lease nodes", func() bool {
		return watched(f, 0, leases[0]) && watched(f, 0, leases[1])
	})
	for _, ls := range leases {
		data := `{"id":"x","host":"vm","pid":1,"tag":"sole-lease","sealed":true}`
		_, err := zc.Set(ls, []byte(data), -1)
		require.NoError(t, err)
	}
	w.notGranted(t, 1500*time.Millisecond, "our waiter got a lease while both foreign leases are held: 3 holders of 2")
	require.NoError(t, zc.Delete(leases[0], -1))
	w.wait(t, 5*time.Second, "no lease 5 s after a foreign lease was deleted")
	require.NoError(t, w.release())
}

// TestSemaphoreSharedListingsCancelStress checks Semaphore's "at
// most as many holders at a time as it has leases ... among every process
// that uses the same path" and semaphoremutex's "Nothing is left behind" with one session's
// shared listings: 2 sessions × 8 goroutines on one 3-lease semaphore, a
// third of the acquires with a 5–60 ms deadline, leases returned from a
// goroutine other than the acquirer's half the time. Ledger at every
// entry; no node left at the end.
func TestSemaphoreSharedListingsCancelStress(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	path := f.Path("sem")
	bys := f.Raw()
	const leases = 3
	var occ occupancy
	var grants atomic.Int32
	stop := time.Now().Add(7 * time.Second)
	mk := func(s *conn.Session) *semaphoremutex.Semaphore {
		sem, err := semaphoremutex.NewSemaphore(s, path, leases)
		require.NoError(t, err)
		return sem
	}
	onSessions(f, 2, 8, mk, func(sem *semaphoremutex.Semaphore, g int) {
		r := rand.New(rand.NewSource(int64(g)))
		_, err := stressLoop(ctx, r, stop, 8*time.Second, sem.Acquire, func(l *conn.Lease) {
			if n := occ.enter(); n > leases {
				t.Errorf("g%d: %d holders of a %d-lease semaphore", g, n, leases)
			}
			grants.Add(1)
			time.Sleep(time.Duration(r.Intn(3)) * time.Millisecond)
			occ.leave()
			ret := func() {
				if err := sem.ReturnLease(context.WithoutCancel(ctx), l); err != nil {
					t.Errorf("g%d: return: %v", g, err)
				}
			}
			if r.Intn(2) == 0 {
				ret()
			} else {
				done := make(chan struct{})
				go func() { ret(); close(done) }()
				<-done
			}
		})
		if err != nil {
			t.Errorf("g%d: %v", g, err)
		}
	})
	t.Logf("%d grants, peak %d holders", grants.Load(), occ.peak.Load())
	if occ.peak.Load() < 2 {
		t.Errorf("peak %d: the semaphore never shared", occ.peak.Load())
	}
	waitFor(t, 10*time.Second, "no node left", func() bool {
		for _, ch := range children(bys, path) {
			if len(children(bys, path+"/"+ch)) > 0 {
				return false
			}
		}
		return true
	})
}

// TestSemaphoreMutexLossCountedOnce: one semaphoremutex.Mutex
// holder, one bystander delete of its node, one loss, counted once (with and
// without local handoff). Promises checked:
//   - metrics.LockLost: "a held lease was found lost, with a Cause. Once
//     per lease, when the lease learns it";
//   - docs/operations.md: "A semaphoremutex's holds and losses are counted
//     under `semaphore` (its lease's) ... `semaphore-lock` is a semaphore's
//     internal lock (PATH/locks), held only while a lease is taken", and its
//     alert "Leases lost | increase(zkrecipes_lock_lost_total[5m]) > 0 |
//     Every loss is a holder that must stop mid-work".
//
// With one lease the internal lock node is the lease (semaphoremutex's "One
// lease: the internal mutex is the lease"); its deletion must be reported
// once, as recipe "semaphore".
func TestSemaphoreMutexLossCountedOnce(t *testing.T) {
	forEach(t, []string{"plain", "local-handoff"}, func(t *testing.T, f *fixture, name string) {
		ctx := ctxT(t, 20*time.Second)
		rec := &metricsRec{}
		s := f.Session(conn.WithMetrics(rec.Hooks()))
		recipe := map[string]string{"plain": "semaphoremutex", "local-handoff": "semaphoremutex-handoff"}[name]
		m := newLocker(t, recipe, s, f.Path("semlost"), 0)
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		lost := l.Lost()
		waitFor(t, 5*time.Second, "lease watched", func() bool { return rec.watches.Load() == 1 })
		require.NoError(t, f.Raw().Delete(connlink.Of(s).FullPath(l.Path()), -1), "bystander delete of %s", l.Path())
		recv(t, lost, 5*time.Second, "Lost not closed after the bystander's delete")
		if err := m.Release(ctx); err != nil {
			t.Logf("release after loss: %v", err)
		}
		// Give a second report time to come; none is allowed.
		eventually(time.Second, func() bool { return rec.count(metrics.LockLost, "", "") > 1 })
		t.Logf("lock events: %s", rec.dump())
		rec.expect(t, 1, metrics.LockLost, "", "", "LockLost reports of one holder's one loss")
		rec.expect(t, 1, metrics.LockLost, "semaphore", metrics.CauseNodeDeleted, "LockLost{recipe=semaphore, cause=node_deleted}")
	})
}

// TestSemaphoreWaiterCountedAsLost: a semaphoremutex.Mutex
// contender waits while a foreign lease (a Curator-style lease node) is
// held; it waits holding the internal lock (semaphoremutex: "Otherwise it
// keeps the internal mutex and waits ... until one is deleted"). A
// bystander deletes that internal lock node. Nobody held a lease of ours,
// so nothing was lost: metrics.LockLost is "a held lease was found lost", and
// docs/operations.md's alert says of zkrecipes_lock_lost_total "Every loss
// is a holder that must stop mid-work". The contender is then granted once
// the foreign lease goes and releases; LockLost must not have been reported.
func TestSemaphoreWaiterCountedAsLost(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	rec := &metricsRec{}
	s := f.Session(conn.WithMetrics(rec.Hooks()))
	zc := f.Raw()
	path := f.Path("semwait")
	full := connlink.Of(s).FullPath(path)
	for _, p := range []string{f.Root(), full, full + "/leases"} {
		_, _ = zc.Create(p, nil, 0, zkWorld)
	}
	foreign, err := zc.Create(full+"/leases/_c_3f1e2d4c-5b6a-4789-8abc-def012345678-lease-", []byte("curator"), zkEphemeralSequential, zkWorld)
	require.NoError(t, err)
	m, _ := semaphoremutex.New(s, path)
	got := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctx)
		got <- err
	}()
	waitFor(t, 10*time.Second, "internal lock node", func() bool { return len(children(zc, full+"/locks")) == 1 })
	sid := epochOf(t, s).SessionID()
	waitFor(t, 10*time.Second, "contender watching the lease on the server", func() bool { return len(sessionWatches(t, f, 0, sid)) >= 1 })
	t.Logf("server watches of the session: %v; gauge %d", sessionWatches(t, f, 0, sid), rec.watches.Load())
	select {
	case err := <-got:
		t.Fatalf("acquire returned while a foreign lease is held: %v", err)
	default:
	}
	internal := children(zc, full+"/locks")[0]
	require.NoError(t, zc.Delete(full+"/locks/"+internal, -1))
	require.NoError(t, zc.Delete(foreign, -1))
	require.NoError(t, recv(t, got, 15*time.Second, "not granted after the foreign lease went"))
	require.NoError(t, m.Release(ctx))
	t.Logf("lock events: %s", rec.dump())
	rec.expect(t, 0, metrics.LockLost, "", "", "LockLost reports (no held lease was lost)")
}

// TestSemaphoreWaiterLeavesNoWatchOnOtherLeases: a semaphore waiter
// "keeps a data watch on N of them" (docs/design.md, "The semaphore's wait
// for a lease"); docs/safety.md: "after any number of acquire/release cycles
// on an open session the server holds no watch of that session on lock
// nodes", and a waiter that gives up leaves no watch either. Three leases,
// three holders on sessions of their own; a waiter on a fourth session is
// granted when one holder returns its lease (granted) or gives up
// (timeout): its session must keep no watch on the other holders' lease
// nodes.
func TestSemaphoreWaiterLeavesNoWatchOnOtherLeases(t *testing.T) {
	f, ctx := setUp(t, 40*time.Second)
	for _, how := range []string{"granted", "timeout"} {
		t.Run(how, func(t *testing.T) {
			f := f.In(t)
			path := f.Path("sem-w-" + how)
			var hs []*semaphoremutex.Semaphore
			var ls []*conn.Lease
			for i := 0; i < 3; i++ {
				sem, err := semaphoremutex.NewSemaphore(f.Session(), path, 3)
				require.NoError(t, err)
				l, err := sem.Acquire(ctx)
				require.NoError(t, err)
				hs = append(hs, sem)
				ls = append(ls, l)
			}
			rec, sw := f.metered()
			w, err := semaphoremutex.NewSemaphore(sw, path, 3)
			require.NoError(t, err)
			sid := epochOf(t, sw).SessionID()
			// Warm-up of the waiter's session: a semaphore of its own.
			warm, _ := semaphoremutex.NewSemaphore(sw, path+"-warm", 3)
			wl, err := warm.Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, warm.ReturnLease(ctx, wl))
			base := steadyGoroutines(t)
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			got := make(chan *conn.Lease, 1)
			failed := make(chan error, 1)
			go func() {
				l, err := w.Acquire(wctx)
				if err != nil {
					failed <- err
					return
				}
				got <- l
			}()
			waitFor(t, 5*time.Second, "the waiter's watches on the lease nodes", func() bool {
				return len(sessionWatches(t, f, 0, sid)) >= 3
			})
			t.Logf("waiting: %v", sessionWatches(t, f, 0, sid))
			if how == "granted" {
				require.NoError(t, hs[0].ReturnLease(ctx, ls[0]))
				l := recv(t, got, 5*time.Second, "waiter not granted")
				if !eventually(3*time.Second, func() bool { return len(sessionWatches(t, f, 0, sid)) == 0 }) {
					t.Errorf("granted waiter (nobody watches its lease) keeps watches: %v", sessionWatches(t, f, 0, sid))
				}
				require.NoError(t, w.ReturnLease(ctx, l))
				t.Logf("after ReturnLease: watches gauge %d, server %v", rec.watches.Load(), sessionWatches(t, f, 0, sid))
				if now := steadyGoroutines(t); now > base {
					t.Errorf("goroutines: %d before the waiter queued, %d after its grant and ReturnLease", base, now)
				}
				// The other two holders still hold: their lease nodes stay.
			} else {
				err := recv(t, failed, 5*time.Second, "waiter did not time out")
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("waiter: %v", err)
				}
			}
			noWatchesOf(t, f, sid, 3*time.Second, "the semaphore waiter's session")
			if g, n := rec.watches.Load(), len(sessionWatches(t, f, 0, sid)); g != int64(n) {
				t.Errorf("watches gauge %d, but the server lists %d watches of the session", g, n)
			}
			for _, p := range sessionWatches(t, f, 0, sid) {
				if strings.HasPrefix(p, path) {
					t.Logf("left: %s", p)
				}
			}
		})
	}
}

// goroutineDump is the process's goroutine profile, one entry per stack.
func goroutineDump() map[string]int {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	out := map[string]int{}
	text := b.String()
	if i := strings.Index(text, "\n"); i >= 0 {
		text = text[i+1:] // the header line
	}
	for _, e := range strings.Split(text, "\n\n") {
		var n int
		fmt.Sscanf(e, "%d @", &n)
		if i := strings.Index(e, "\n"); i >= 0 {
			out[e[i+1:]] += n
		}
	}
	return out
}

// newStacks lists the stacks more goroutines run in after than before.
func newStacks(before, after map[string]int) string {
	var b strings.Builder
	for st, n := range after {
		if n > before[st] {
			fmt.Fprintf(&b, "+%d\n%s\n", n-before[st], st)
		}
	}
	return b.String()
}

// TestSemaphoreWaiterWatchesDoNotAccumulate: the test above, repeated: two
// holders keep their leases of three while the third lease passes from H
// to the waiter W (its wait watches the three lease nodes) and back, five
// times. Watches and goroutines of W's session must not grow with the
// cycles (docs/safety.md: "after any number of acquire/release cycles on
// an open session the server holds no watch of that session on lock
// nodes").
func TestSemaphoreWaiterWatchesDoNotAccumulate(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	path := f.Path("sem-acc")
	for i := 0; i < 2; i++ {
		sem, _ := semaphoremutex.NewSemaphore(f.Session(), path, 3)
		_, err := sem.Acquire(ctx)
		require.NoError(t, err)
	}
	h, _ := semaphoremutex.NewSemaphore(f.Session(), path, 3)
	rec, sw := f.metered()
	w, _ := semaphoremutex.NewSemaphore(sw, path, 3)
	sid := epochOf(t, sw).SessionID()
	warm, _ := semaphoremutex.NewSemaphore(sw, path+"-warm", 3)
	wl, err := warm.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, warm.ReturnLease(ctx, wl))
	base := steadyGoroutines(t)
	before := goroutineDump()
	const cycles = 5
	for i := 0; i < cycles; i++ {
		hl, err := h.Acquire(ctx)
		require.NoError(t, err)
		got := make(chan *conn.Lease, 1)
		go func() {
			l, err := w.Acquire(ctx)
			if err != nil {
				t.Errorf("W: %v", err)
				close(got)
				return
			}
			got <- l
		}()
		// W is waiting once the lease nodes are watched; the wait only
		// shapes the scenario.
		waitFor(t, 5*time.Second, "W watching the lease nodes", func() bool {
			return len(sessionWatches(t, f, 0, sid)) >= 3
		})
		require.NoError(t, h.ReturnLease(ctx, hl))
		l := recv(t, got, 5*time.Second, "W not granted")
		require.NotNil(t, l)
		require.NoError(t, w.ReturnLease(ctx, l))
	}
	now := steadyGoroutines(t)
	ws := sessionWatches(t, f, 0, sid)
	t.Logf("after %d cycles: goroutines %d -> %d, watches gauge %d, server watches of W's session %d", cycles, base, now, rec.watches.Load(), len(ws))
	if now > base || len(ws) > 0 || rec.watches.Load() != 0 {
		t.Errorf("after %d wait/grant/return cycles with the session open: %d goroutines more, %d watches on the server, gauge %d; want none; new stacks:\n%s", cycles, now-base, len(ws), rec.watches.Load(), newStacks(before, goroutineDump()))
	}
}

// TestSecondAcquireOfHoldingHandleTimeoutCounted: a handle-owned
// lock (semaphoremutex.Mutex, exclusive.Lock: "not reentrant: a second
// Acquire waits") whose second Acquire, from another goroutine, waits for
// the handle's own hold until its deadline. metrics.LockWait is "an
// Acquire or TryAcquire ... returned after Duration, with an Outcome (a
// re-entry is not reported)", and operations.md's "Waits time out" alert
// counts outcome="timeout": that wait must be reported as a timeout. The
// hold must not be disturbed. And one granted after waiting 300 ms for
// the handle's hold reports a wait (Duration) of at least 300 ms, and a
// TryAcquire of the holding handle is reported with outcome not_granted.
func TestSecondAcquireOfHoldingHandleTimeoutCounted(t *testing.T) {
	for _, name := range []string{"semaphoremutex", "semaphoremutex-handoff", "exclusive"} {
		t.Run(name, func(t *testing.T) {
			f, ctx := setUp(t, 30*time.Second)
			rec, s := f.metered()
			path := f.Path("second")
			lk := newLocker(t, name, s, path, 0).(interface {
				locker
				TryAcquire(context.Context) (*conn.Lease, bool, error)
			})
			l1, err := lk.Acquire(ctx)
			require.NoError(t, err)
			errc := make(chan error, 1)
			go func() {
				c, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				_, err := lk.Acquire(c)
				errc <- err
			}()
			err = recv(t, errc, 2*time.Second, "second acquire stuck")
			t.Logf("second acquire: %v", err)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("second acquire: %v", err)
			}
			if _, ok, err := lk.TryAcquire(ctx); ok || err != nil {
				t.Errorf("TryAcquire of the holding handle: %v %v", ok, err)
			}
			if l1.Err() != nil {
				t.Errorf("hold disturbed: %v", l1.Err())
			}
			// a second Acquire that waits 300 ms for the handle's own
			// hold, then is granted: its wait lasted at least 300 ms
			go func() {
				_, err := lk.Acquire(ctx)
				errc <- err
			}()
			time.Sleep(300 * time.Millisecond) // shapes: the second Acquire waits this long
			require.NoError(t, lk.Release(ctx))
			require.NoError(t, recv(t, errc, 5*time.Second, "third acquire not granted"))
			require.NoError(t, lk.Release(ctx))
			rec.mu.Lock()
			var last metrics.Lock
			for _, l := range rec.locks {
				if l.Event == metrics.LockWait && l.Outcome == metrics.OutcomeGranted {
					last = l
				}
			}
			rec.mu.Unlock()
			if last.Duration < 300*time.Millisecond {
				t.Errorf("an Acquire that waited 300 ms for the handle's hold reported a wait of %v", last.Duration)
			}
			t.Logf("events %s", rec.dump())
			rec.expect(t, 1, metrics.LockWait, "", metrics.OutcomeTimeout, "timed-out waits")
			rec.expect(t, 1, metrics.LockWait, "", metrics.OutcomeNotGranted, "TryAcquires not granted")
		})
	}
}

// releaseErrSaysPathOnce checks package lock's "Errors say the recipe, the
// operation and the lock's path once, then the cause" on err, a release
// of the lock at path by recipe, that must match want.
func releaseErrSaysPathOnce(t *testing.T, err error, recipe, path string, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("release: %v, want %v", err, want)
		return
	}
	// The cause may name a node below path (the node a delete is pending
	// for), not path itself again, nor the recipe.
	msg, prefix := err.Error(), recipe+": release "+path+": "
	rest, ok := strings.CutPrefix(msg, prefix)
	if !ok || strings.Count(rest, path) != strings.Count(rest, path+"/") || strings.Contains(rest, recipe+": ") {
		t.Errorf("release error %q: want %q once, then the cause", msg, prefix)
	}
}

// pendingRelease returns the error of a release of recipe's lock at path
// whose delete cannot be confirmed: its session's connection blackholed,
// and, with inflight, a guarded write of the holder in flight (a local
// handoff's release waits for it). The connection is healed after.
func pendingRelease(t *testing.T, f *fixture, recipe, path string, inflight bool) error {
	t.Helper()
	ctx := ctxT(t, 40*time.Second)
	px, s := f.ProxiedSession(conn.WithSessionTimeout(20 * time.Second))
	lk := newLocker(t, recipe, s, path, 0)
	l, err := lk.Acquire(ctx)
	require.NoError(t, err)
	res := path + "-res"
	f.Register(res, nil)
	written := make(chan error, 1)
	px.Blackhole()
	if inflight {
		go func() { written <- guardedSet(ctx, l, res, []byte("w"), -1) }()
		quiet(t, written, 200*time.Millisecond, "the guarded write returned while blackholed")
	} else {
		written <- nil
	}
	_, err = timed(ctx, 500*time.Millisecond, lk.Release)
	px.Heal()
	recv(t, written, 25*time.Second, "the guarded write never returned")
	return err
}

// TestSemaphoreMutexErrorsSayRecipeAndPathOnce: semaphoremutex's Release
// and ReturnLease errors say "semaphoremutex: release <the lock's path>: "
// and then the cause, naming neither again (a node below the path may be
// named by the cause): a release whose delete is unconfirmed (lock.ErrReleasePending),
// with and without lock.WithLocalHandoff, with a guarded write in flight,
// and a lease returned twice (lock.ErrNotHeld).
func TestSemaphoreMutexErrorsSayRecipeAndPathOnce(t *testing.T) {
	for _, c := range []struct {
		recipe   string
		inflight bool
	}{
		{"semaphoremutex", false}, {"semaphoremutex-handoff", false}, {"semaphoremutex-handoff", true},
		{"semaphore-1", false}, {"semaphore-3", false},
	} {
		t.Run(fmt.Sprintf("%s/inflight=%v", c.recipe, c.inflight), func(t *testing.T) {
			f := newFixture(t)
			path := f.Path("errs")
			err := pendingRelease(t, f, c.recipe, path, c.inflight)
			t.Logf("%v", err)
			releaseErrSaysPathOnce(t, err, "semaphoremutex", path, lock.ErrReleasePending)
		})
	}
	t.Run("ReturnLease twice", func(t *testing.T) {
		f := newFixture(t)
		ctx := ctxT(t, 20*time.Second)
		path := f.Path("twice")
		for _, n := range []int{1, 3} {
			sem, err := semaphoremutex.NewSemaphore(f.Session(), path+strconv.Itoa(n), n)
			require.NoError(t, err)
			l, err := sem.Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, sem.ReturnLease(ctx, l))
			err = sem.ReturnLease(ctx, l)
			t.Logf("%v", err)
			releaseErrSaysPathOnce(t, err, "semaphoremutex", path+strconv.Itoa(n), lock.ErrNotHeld)
		}
		m, err := semaphoremutex.New(f.Session(), path+"m")
		require.NoError(t, err)
		err = m.Release(ctx)
		releaseErrSaysPathOnce(t, err, "semaphoremutex", path+"m", lock.ErrNotHeld)
	})
}
