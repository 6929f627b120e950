package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// waitPair is a holder in one session and a waiter in another, on one
// path: hold takes the lock, wait waits for it.
type waitPair struct {
	hold, wait func(ctx context.Context) error
}

// waitPairs makes, for each recipe, a holder in sh and a waiter in sw.
func waitPairs(sh, sw *conn.Session) map[string]func(t *testing.T, path string) waitPair {
	// pair: the holder acquires holds times (a semaphore's every lease)
	pair := func(holder, waiter string, holds int) func(*testing.T, string) waitPair {
		return func(t *testing.T, path string) waitPair {
			h, w := newLocker(t, holder, sh, path, 0), newLocker(t, waiter, sw, path, 1)
			return waitPair{func(ctx context.Context) error {
				for i := 0; i < holds; i++ {
					if _, err := h.Acquire(ctx); err != nil {
						return err
					}
				}
				return nil
			}, acquireErr(w)}
		}
	}
	return map[string]func(*testing.T, string) waitPair{
		"mutex":                    pair("mutex", "mutex", 1),
		"rwlock-read-behind-write": pair("rwlock-write", "rwlock-read", 1),
		"rwlock-write-behind-read": pair("rwlock-read", "rwlock-write", 1),
		"semaphoremutex":           pair("semaphoremutex", "semaphoremutex", 1),
		"semaphore-2":              pair("semaphore-2", "semaphore-2", 2),
		"exclusive":                pair("exclusive", "exclusive", 1),
		"leader":                   pair("leader", "leader", 1),
		"multilock": func(t *testing.T, path string) waitPair {
			h, _ := mutex.New(sh, path+"/b")
			a, _ := mutex.New(sw, path+"/a")
			b, _ := mutex.New(sw, path+"/b")
			m, _ := multilock.New(b, a)
			return waitPair{acquireErr(h), func(ctx context.Context) error { _, err := m.Acquire(ctx); return err }}
		},
	}
}

// heldPair makes mk's pair on path and has its holder take the lock; it
// returns the pair and the ephemeral nodes under path then.
func heldPair(t *testing.T, ctx context.Context, f *fixture, mk func(*testing.T, string) waitPair, path string) (waitPair, int) {
	t.Helper()
	p := mk(t, path)
	require.NoError(t, p.hold(ctx))
	return p, countNodes(f.Raw(), path)
}

// nothingLeft reports an error unless, within d, server 0 lists no watch
// under path and the ephemeral nodes under it are back to before; after
// says when, for the message.
func nothingLeft(t *testing.T, f *fixture, path string, before int, d time.Duration, after string) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		ws, n := watchesUnder(f, 0, path), countNodes(f.Raw(), path)
		if len(ws) == 0 && n == before {
			return
		}
		if time.Now().After(end) {
			if len(ws) != 0 {
				t.Errorf("watches left on the server %s: %v", after, ws)
			}
			if n != before {
				t.Errorf("ephemeral nodes under %s: %d before the waiter, %d %s", path, before, n, after)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNoWatchLeftByTimedOutWaiter checks conn/doc.go: "A watch nobody
// waits on any more is removed from the server. The recipes tell the epoch
// when a waiter gives up" and the BRIEF's "No orphan node, watch or
// goroutine after cancel/timeout", for a waiter of every recipe whose ctx
// deadline ends while another session holds: once Acquire has returned, no
// node of the waiter is left and the server lists no watch under the path.
// semaphore-2 and semaphoremutex/doc.go: "A waiter that gives up removes
// its watches from the server" (its watches on N lease nodes).
func TestNoWatchLeftByTimedOutWaiter(t *testing.T) {
	f := newFixture(t)
	sh := f.Session() // holder, never arms Lost
	sw := f.Session() // waiter
	_ = f.Raw()       // the bystander, made here rather than in a subtest
	mk := waitPairs(sh, sw)
	for name, mkPair := range mk {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := f.Path("watch-leak-") + name
			p, before := heldPair(t, ctx, f, mkPair, path)
			took, err := timed(ctx, 800*time.Millisecond, p.wait)
			if took > 800*time.Millisecond+250*time.Millisecond {
				t.Errorf("waiter returned %v after its ctx began (deadline 800 ms)", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("waiter: %v, want DeadlineExceeded", err)
			}
			nothingLeft(t, f, path, before, 3*time.Second, "3 s after the waiter gave up")
		})
	}
}

// TestNoWatchLeftByWaiterTimedOutWhileBlackholed checks conn/doc.go:
// "when no other watcher of the session waits on that path and kind ...
// the server's watch is removed with removeWatches ..., and it does not
// come back on a reconnect", and each recipe's "Nothing is left behind: a
// failed, timed-out or cancelled acquire deletes its node ... What cannot be
// done within those 100 ms goes on in the background", for a waiter whose
// deadline ends while its connection is blackholed, the same session coming
// back afterwards (the blackhole is shorter than the session timeout).
func TestNoWatchLeftByWaiterTimedOutWhileBlackholed(t *testing.T) {
	f := newFixture(t)
	sh := f.Session()
	px, sw := f.ProxiedSession()
	_ = f.Raw() // the bystander, made here rather than in a subtest
	mk := waitPairs(sh, sw)
	for _, name := range []string{"mutex", "rwlock-read-behind-write", "semaphore-2", "exclusive", "leader"} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 25*time.Second)
			path := f.Path("bh-watch-") + name
			p, before := heldPair(t, ctx, f, mk[name], path)
			ep, err := connlink.Of(sw).Epoch(ctx)
			require.NoError(t, err)
			sid := ep.SessionID()
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- p.wait(wctx) }()
			waitFor(t, 5*time.Second, "the waiter's watch", func() bool {
				return len(watchesUnder(f, 0, path)) > 0
			})
			px.Blackhole()
			time.Sleep(200 * time.Millisecond) // the waiter is cut off (observable only by time)
			cancel()
			start := time.Now()
			err, ok := within(done, 3*time.Second)
			if !ok {
				px.Heal()
				t.Fatalf("waiter did not return 3 s after cancel while blackholed")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("waiter: %v, want context.Canceled", err)
			}
			if took := time.Since(start); took > 250*time.Millisecond {
				t.Errorf("waiter returned %v after cancel while blackholed", took)
			}
			px.Heal()
			waitFor(t, 10*time.Second, "the waiter's session to be back", func() bool {
				ep, err := connlink.Of(sw).Epoch(ctx)
				return err == nil && ep.Err() == nil && sw.State().String() != "Suspended"
			})
			if ep2, _ := connlink.Of(sw).Epoch(ctx); ep2.SessionID() != sid {
				t.Skipf("the session was not kept across the blackhole (%x -> %x): nothing to check", sid, ep2.SessionID())
			}
			nothingLeft(t, f, path, before, 5*time.Second, "5 s after the session came back")
		})
	}
}

// TestSharedWatchSurvivesOneWaiterGivingUp checks conn/doc.go: "A
// watch nobody waits on any more is removed from the server ... when no
// other watcher of the session waits on that path and kind", from the other
// side: when one waiter of a session gives up, another waiter of the same
// session on the same node must still be woken.
//   - rwlock: two readers of one session (two handles) queued behind one
//     writer both watch its W node; one times out; the writer releases; the
//     other must get the read lock.
//   - semaphore: two Semaphore handles (N=2) of one session wait: the first
//     holds the internal mutex and watches the lease nodes; it times out;
//     a lease is released; the second must get a lease.
//   - leader: two Observe calls on one session; one is cancelled; the other
//     must still see the leader change.
func TestSharedWatchSurvivesOneWaiterGivingUp(t *testing.T) {
	f := newFixture(t)
	sh := f.Session()
	sw := f.Session()
	t.Run("rwlock", func(t *testing.T) {
		f := f.In(t)
		ctx := ctxT(t, 20*time.Second)
		path := f.Path("shared-rw")
		h := newRW(t, sh, path)
		_, err := h.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		r1, r2 := newRW(t, sw, path), newRW(t, sw, path)
		h2 := hold(ctx, r2.ReadLock())
		waitFor(t, 5*time.Second, "r2 queued", func() bool { return len(children(f.Raw(), path)) == 2 })
		if _, err := timed(ctx, 500*time.Millisecond, acquireErr(r1.ReadLock())); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("r1: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // give a wrong watch removal time to reach the server
		require.NoError(t, h.WriteLock().Release(ctx))
		h2.wait(t, 5*time.Second, "r2 not woken 5 s after the writer released: its watch went with r1's")
		require.NoError(t, h2.release())
	})
	t.Run("semaphore", func(t *testing.T) {
		f := f.In(t)
		ctx := ctxT(t, 20*time.Second)
		path := f.Path("shared-sem")
		h := newLocker(t, "semaphore-2", sh, path, 0)
		for i := 0; i < 2; i++ {
			_, err := h.Acquire(ctx)
			require.NoError(t, err)
		}
		w1, w2 := newLocker(t, "semaphore-2", sw, path, 1), newLocker(t, "semaphore-2", sw, path, 2)
		c1, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		got1 := make(chan error, 1)
		go func() { got1 <- acquireErr(w1)(c1) }()
		zc := f.Raw()
		waitFor(t, 5*time.Second, "w1 queued", func() bool { return len(children(zc, path+"/locks")) == 1 })
		h2 := hold(ctx, w2)
		waitFor(t, 5*time.Second, "w2 queued", func() bool { return len(children(zc, path+"/locks")) == 2 })
		if err := <-got1; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("w1: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, h.Release(ctx))
		h2.wait(t, 5*time.Second, "w2 got no lease 5 s after one was released")
	})
	t.Run("leader-observe", func(t *testing.T) {
		ctx := ctxT(t, 20*time.Second)
		path := f.Path("shared-observe")
		o1, _ := leader.New(sw, path, "o1")
		o2, _ := leader.New(sw, path, "o2")
		c1, cancel1 := context.WithCancel(ctx)
		ch1 := o1.Observe(c1)
		ch2 := o2.Observe(ctx)
		<-ch1
		<-ch2
		cancel1()
		for range ch1 {
		}
		time.Sleep(300 * time.Millisecond)
		e, _ := leader.New(sh, path, "boss")
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		defer e.Resign(context.WithoutCancel(ctx))
		observeUntil(t, ch2, 5*time.Second, l.Path(), "the remaining Observe did not see the new leader within 5 s")
	})
}

// TestSharedListingMassCancelLeavesNoWatch checks conn's "A watch
// nobody waits on any more is removed from the server" and mutex's "Nothing
// is left behind: a failed, timed-out or cancelled acquire deletes its node",
// with one session's shared listings: B holds; 24 goroutines of session A
// queue on the path (through two handles, one with WithLocalHandoff), then
// all are cancelled at once (one ctx). With A still open, no node of A's
// and no watch of A's (wchp, any path under the lock path or the lock path
// itself) may remain, and the server's watch count (mntr
// zk_watch_count) must come back to what it was with B holding alone.
// Also with the cancel made while A is disconnected (reset, reconnects
// blackholed), A reconnecting to the same session afterwards: the watches
// "do not come back on a reconnect".
func TestSharedListingMassCancelLeavesNoWatch(t *testing.T) {
	forEach(t, []string{"connected", "cancelled-while-disconnected"}, func(t *testing.T, f *fixture, name string) {
		massCancel(t, f, name == "cancelled-while-disconnected")
	})
}

func massCancel(t *testing.T, f *fixture, cut bool) {
	ctx := ctxT(t, 25*time.Second)
	path := f.Path("r2-mass/lock")
	bys := f.Raw()
	px, sA := f.ProxiedSession(conn.WithSessionTimeout(8 * time.Second))
	b, m1, m2 := f.heldAgainst(ctx, sA, path) // B, another session, holds
	watchCount := func() string {
		m, err := f.Mntr(ctx, 0)
		require.NoError(t, err)
		return m["zk_watch_count"]
	}
	base := watchCount()
	actx, cancel := context.WithCancel(ctx)
	const n = 24
	errs := make(chan error, n)
	wg := spawn(n, func(i int) {
		_, err := [2]*mutex.InterProcessMutex{m1, m2}[i%2].Acquire(actx)
		errs <- err
	})
	// Every plain waiter has a node; the handoff ones share one.
	waitFor(t, 10*time.Second, "A's waiters queued", func() bool { return len(children(bys, path)) == 1+n/2+1 })
	time.Sleep(300 * time.Millisecond) // let the waiters set their watches; the check below does not rely on it
	t.Logf("watches with the queue: %s (B alone: %s)", watchCount(), base)
	if cut {
		suspend(t, px, sA)
	}
	cancel()
	wg.Wait()
	if cut {
		px.Heal()
		waitFor(t, 10*time.Second, "A reconnected", func() bool { return sA.State() == conn.Reconnected })
	}
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("acquire: %v", err)
		}
	}
	waitFor(t, 10*time.Second, "only B's node left", func() bool { return len(children(bys, path)) == 1 })
	waitFor(t, 10*time.Second, "the watch count back to B's alone", func() bool { return watchCount() == base })
	out, err := f.FourLetter(ctx, 0, "wchc")
	require.NoError(t, err)
	t.Logf("wchc after the cancel:\n%s", out)
	require.NoError(t, b.release())
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
}

// TestRevokedHolderWatchesGaugeMatchesServer: a revocable holder (with a
// label) arms Lost and Revoked; another session revokes it. At each step
// the holder's watches gauge (metrics.Hooks.Watches: "the number of watches
// the session has on the servers for its callers") equals what the server
// lists for its session (wchc), and both are 0 after its release.
func TestRevokedHolderWatchesGaugeMatchesServer(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	m := &metricsRec{}
	s := f.Session(conn.WithMetrics(m.Hooks()))
	path := f.Path("rev-watch")
	h, err := mutex.New(s, path, lock.WithRevocable())
	require.NoError(t, err)
	l, err := h.Acquire(lock.WithLabel(ctx, "job"))
	require.NoError(t, err)
	sid := epochOf(t, s).SessionID()
	match := func(when string) {
		t.Helper()
		if !eventually(3*time.Second, func() bool { return int(m.watches.Load()) == len(sessionWatches(t, f, 0, sid)) }) {
			t.Errorf("%s: gauge %d, server lists %v", when, m.watches.Load(), sessionWatches(t, f, 0, sid))
		}
	}
	_ = l.Lost()
	revoked := l.Revoked()
	match("armed")
	require.NoError(t, lock.Revoke(ctx, f.Session(), l.Path()))
	recv(t, revoked, 5*time.Second, "Revoked not closed")
	match("revoked")
	select {
	case <-l.Lost():
		t.Fatal("a revoke request made the lease lost")
	default:
	}
	require.NoError(t, h.Release(ctx))
	match("released")
	require.Zero(t, m.watches.Load(), "gauge after release")
}
