package attack_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestDeadlinesKeptWhileServerPaused checks the recipes' "A deadline
// is kept: Acquire and TryAcquire return at the latest 100 ms after ctx ends
// (plus scheduling; the tests allow 250 ms), even when the connection is
// blackholed" (mutex, rwlock, semaphoremutex, exclusive; multilock's "Acquire
// returns at the latest 100 ms after ctx ended, even with the connection
// down"; leader's "a deadline on ctx is the timeout") with the server
// itself frozen (Pause, SIGSTOP) rather than the connection: every call
// with a 600 ms deadline returns within 600+250 ms matching
// DeadlineExceeded; after Resume the session is the same and none of our
// nodes is left.
func TestDeadlinesKeptWhileServerPaused(t *testing.T) {
	f := newFixture(t)
	s := f.Session(conn.WithSessionTimeout(8 * time.Second))
	root := f.Path("paused")
	ep, err := connlink.Of(s).Epoch(context.Background())
	require.NoError(t, err)
	// Create the parents first so that each call gets as far as its create.
	warm, _ := mutex.New(s, root+"/warm")
	_, err = warm.Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, warm.Release(context.Background()))
	r := oneOfEach(s, root)
	calls := []struct {
		name string
		f    func(ctx context.Context) error
	}{
		{"mutex.Acquire", acquireErr(r.m)},
		{"mutex.TryAcquire", tryErr(r.m)},
		{"rwlock.Write", acquireErr(r.rw.WriteLock())},
		{"rwlock.ReadTry", tryErr(r.rw.ReadLock())},
		{"semaphoremutex", acquireErr(r.sm)},
		{"semaphore", acquireErr(r.sem)},
		{"exclusive", acquireErr(r.x)},
		{"leader.Campaign", func(ctx context.Context) error { _, err := r.e.Campaign(ctx); return err }},
		{"multilock", func(ctx context.Context) error { _, err := r.ml.Acquire(ctx); return err }},
	}
	require.NoError(t, f.Pause(0))
	resumed := false
	defer func() {
		if !resumed {
			_ = f.Resume(0)
		}
	}()
	for _, call := range calls {
		took, err := timed(context.Background(), 600*time.Millisecond, call.f)
		if took > 850*time.Millisecond {
			t.Errorf("%s returned after %v (deadline 600 ms) with the server paused", call.name, took)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want DeadlineExceeded", call.name, err)
		}
	}
	require.NoError(t, f.Resume(0))
	resumed = true
	zc := f.Raw()
	waitFor(t, 10*time.Second, "no node of ours left", func() bool { return countNodes(zc, root) == 0 })
	if ep.Err() != nil {
		t.Logf("the epoch ended meanwhile: %v", ep.Err())
	}
}

// TestDeadlinesKeptBySharedListingWaitersBlackholed checks mutex's "A
// deadline is kept: Acquire and TryAcquire return at the latest 100 ms
// after ctx ends (plus scheduling; the tests allow 250 ms), even when the
// connection is blackholed before or during the create", for waiters of
// one session sharing their listings: B holds; 20 goroutines of A (half
// through a WithLocalHandoff handle) start acquiring with deadlines
// staggered 150 ms – 1.1 s, and A's connection is blackholed a few ms
// later, with creates and listings in flight. Every Acquire must return
// within 250 ms of its deadline; after Heal no node of A's may remain.
func TestDeadlinesKeptBySharedListingWaitersBlackholed(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 25*time.Second)
	path := f.Path("r2-deadline/lock")
	px, sA := f.ProxiedSession(conn.WithSessionTimeout(8 * time.Second))
	b, m1, m2 := f.heldAgainst(ctx, sA, path) // B, another session, holds
	var mu sync.Mutex
	worst := time.Duration(0)
	wg := spawn(20, func(i int) {
		m := [2]*mutex.InterProcessMutex{m1, m2}[i%2]
		deadline := time.Now().Add(150*time.Millisecond + time.Duration(i)*50*time.Millisecond)
		actx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		_, err := m.Acquire(actx)
		late := time.Since(deadline)
		if err == nil {
			t.Errorf("w%d: granted while B holds", i)
		}
		mu.Lock()
		worst = max(worst, late)
		mu.Unlock()
		if late > 250*time.Millisecond {
			t.Errorf("w%d: returned %v after its deadline: %v", i, late, err)
		}
	})
	time.Sleep(5 * time.Millisecond) // some requests in flight; the checks do not depend on it
	px.Blackhole()
	wg.Wait()
	t.Logf("latest return: %v after the deadline", worst)
	px.Heal()
	waitFor(t, 15*time.Second, "only B's node left", func() bool { return len(children(f.Raw(), path)) == 1 })
	require.NoError(t, b.release())
}

// TestGrantReadBlackholedKeepsDeadline: two goroutines of one session
// on one lock; the second waits behind the first. Since the new drain, "A
// grant decided on a notification of a plain deletion now first reads the
// waiter's own node" (CHANGELOG), and a leader's Campaign "Before it returns
// ... reads our node once". Here the holder's release (a delete) is answered
// and the connection is blackholed right after the next request, which is
// the waiter's read before its grant: its answer never comes. The waiter's
// ctx ends 1 s later; docs/safety.md guarantee 6: "Every Acquire and
// TryAcquire ... returns at the latest 100 ms after its ctx ends, plus
// scheduling, whatever the connection does" (the suite allows 250 ms), and
// package lock: "Acquire blocks until the lock is held or ctx ends; one whose
// ctx ends first returns an error matching ctx.Err()". The leader is held
// to "Campaign queues our node and blocks until we lead or ctx ends; a
// deadline on ctx is the timeout" with the same 250 ms.
// WithLastHeardTimer: no quorum syncs to fire the blackhole early, and the
// epoch lives for T = 4 s, past the deadline.
func TestGrantReadBlackholedKeepsDeadline(t *testing.T) {
	forEach(t, []string{"mutex", "semaphoremutex", "rwlock", "leader", "exclusive"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 40*time.Second)
		px, s := f.ProxiedSession(conn.WithLastHeardTimer())
		path := f.Path("r3-grantread/") + recipe
		h := hold(ctx, newLocker(t, recipe, s, path, 1))
		h.wait(t, 60*time.Second, "h")
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		w := hold(wctx, newLocker(t, recipe, s, path, 2))
		waitFor(t, 10*time.Second, "waiter watching", func() bool {
			return len(sessionWatches(t, f, 0, epochOf(t, s).SessionID())) >= 1
		})
		px.BlackholeAfterWrites(2)
		if err := h.release(); err != nil {
			t.Logf("holder's release: %v", err)
		}
		deadline := time.Now().Add(time.Second)
		dctx, dcancel := context.WithDeadline(wctx, deadline)
		defer dcancel()
		// The waiter's own ctx is wctx; bound it by the deadline through
		// cancelling wctx when dctx ends.
		go func() { <-dctx.Done(); wcancel() }()
		select {
		case l := <-w.got:
			t.Logf("waiter granted (blackholed: %v, Err %v)", px.Blackholed(), l.Err())
		case err := <-w.failed:
			late := time.Since(deadline)
			t.Logf("waiter: %v, %v after its ctx ended (blackholed: %v)", err, late, px.Blackholed())
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error %v does not match ctx's", err)
			}
			if late > 250*time.Millisecond {
				t.Errorf("returned %v after its ctx ended, want at most 250 ms", late)
			}
		case <-time.After(3500 * time.Millisecond):
			t.Errorf("waiter still blocked 2.5 s after its ctx ended (blackholed: %v)", px.Blackholed())
		}
		px.Heal()
	})
}

// TestParticipantsAndFenceKeepDeadlineBlackholed: with the connection
// blackholed, the recipes' Participants (rwlock's new one included) and a
// local handoff's Lease.Fence return by their ctx's deadline (plus 250 ms),
// with an error matching context.DeadlineExceeded or conn.ErrLeaseLost,
// never a stale success for the listing.
func TestParticipantsAndFenceKeepDeadlineBlackholed(t *testing.T) {
	f := newFixture(t)
	p, s := f.ProxiedSession(conn.WithSessionTimeout(20 * time.Second))
	ctx := ctxT(t, 60*time.Second)
	mpath := f.Path("m")
	m1, err := mutex.New(s, mpath, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	m2, err := mutex.New(s, mpath, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	rw := newRW(t, s, f.Path("rw"))
	sem, err := semaphoremutex.NewSemaphore(s, f.Path("sem"), 2)
	require.NoError(t, err)
	_, err = m1.Acquire(ctx)
	require.NoError(t, err)
	h2 := hold(ctx, m2)
	h2.notGranted(t, 200*time.Millisecond, "m2 granted while m1 holds")
	_, err = rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	_, err = sem.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m1.Release(ctx))
	l2 := h2.wait(t, 10*time.Second, "m2 by local handoff")

	p.Blackhole()
	calls := map[string]func(context.Context) error{
		"mutex.Participants":     func(c context.Context) error { _, err := m1.Participants(c); return err },
		"rwlock.Participants":    func(c context.Context) error { _, err := rw.Participants(c); return err },
		"semaphore.Participants": func(c context.Context) error { _, err := sem.Participants(c); return err },
		"handoff Lease.Fence":    func(c context.Context) error { _, err := l2.Fence(c); return err },
	}
	for name, call := range calls {
		took, err := timed(ctx, 500*time.Millisecond, call)
		t.Logf("%s: %v after %v", name, err, took)
		if took > 750*time.Millisecond {
			t.Errorf("%s returned %v after its 500 ms deadline", name, took-500*time.Millisecond)
		}
		if strings.HasSuffix(name, "Participants") && err == nil {
			t.Errorf("%s succeeded with the connection blackholed", name)
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, conn.ErrLeaseLost) {
			t.Errorf("%s: %v matches neither context.DeadlineExceeded nor conn.ErrLeaseLost", name, err)
		}
	}
	p.Heal()
	require.NoError(t, h2.release())
}
