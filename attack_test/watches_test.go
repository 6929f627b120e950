package attack_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// watchesUnder lists the watched paths (wchp on server i) under prefix.
func watchesUnder(f *fixture, i int, prefix string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := f.FourLetter(ctx, i, "wchp")
	if err != nil {
		return []string{"wchp: " + err.Error()}
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if p := strings.TrimSpace(l); p == prefix || strings.HasPrefix(p, prefix+"/") {
			got = append(got, p)
		}
	}
	return got
}

// waitPair is a holder in one session and a waiter in another, on one
// path: hold takes the lock, wait waits for it.
type waitPair struct {
	hold, wait func(ctx context.Context) error
}

// waitPairs makes, for each recipe, a holder in sh and a waiter in sw.
func waitPairs(sh, sw *conn.Session) map[string]func(path string) waitPair {
	acquire := func(l locker) func(context.Context) error {
		return func(ctx context.Context) error { _, err := l.Acquire(ctx); return err }
	}
	return map[string]func(path string) waitPair{
		"mutex": func(path string) waitPair {
			h, _ := mutex.New(sh, path)
			w, _ := mutex.New(sw, path)
			return waitPair{acquire(h), acquire(w)}
		},
		"rwlock-read-behind-write": func(path string) waitPair {
			h, _ := rwlock.New(sh, path)
			w, _ := rwlock.New(sw, path)
			return waitPair{acquire(h.WriteLock()), acquire(w.ReadLock())}
		},
		"rwlock-write-behind-read": func(path string) waitPair {
			h, _ := rwlock.New(sh, path)
			w, _ := rwlock.New(sw, path)
			return waitPair{acquire(h.ReadLock()), acquire(w.WriteLock())}
		},
		"semaphoremutex": func(path string) waitPair {
			h, _ := semaphoremutex.New(sh, path)
			w, _ := semaphoremutex.New(sw, path)
			return waitPair{acquire(h), acquire(w)}
		},
		"semaphore-2": func(path string) waitPair {
			h, _ := semaphoremutex.NewSemaphore(sh, path, 2)
			w, _ := semaphoremutex.NewSemaphore(sw, path, 2)
			return waitPair{func(ctx context.Context) error {
				if _, err := h.Acquire(ctx); err != nil {
					return err
				}
				_, err := h.Acquire(ctx)
				return err
			}, func(ctx context.Context) error { _, err := w.Acquire(ctx); return err }}
		},
		"exclusive": func(path string) waitPair {
			h, _ := exclusive.New(sh, path)
			w, _ := exclusive.New(sw, path)
			return waitPair{acquire(h), acquire(w)}
		},
		"leader": func(path string) waitPair {
			h, _ := leader.New(sh, path, "h")
			w, _ := leader.New(sw, path, "w")
			return waitPair{func(ctx context.Context) error { _, err := h.Campaign(ctx); return err },
				func(ctx context.Context) error { _, err := w.Campaign(ctx); return err }}
		},
		"multilock": func(path string) waitPair {
			h, _ := mutex.New(sh, path+"/b")
			a, _ := mutex.New(sw, path+"/a")
			b, _ := mutex.New(sw, path+"/b")
			m, _ := multilock.New(b, a)
			return waitPair{acquire(h), func(ctx context.Context) error { _, err := m.Acquire(ctx); return err }}
		},
	}
}

// leftOver polls for up to d until server 0 lists no watch under path and
// the ephemeral nodes under it are back to before; it returns what is left.
func leftOver(f *fixture, path string, before int, d time.Duration) (ws []string, n int) {
	end := time.Now().Add(d)
	for {
		ws, n = watchesUnder(f, 0, path), countNodes(f.Raw(), path)
		if (len(ws) == 0 && n == before) || time.Now().After(end) {
			return ws, n
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
	zc := f.Raw()
	mk := waitPairs(sh, sw)
	for name, mkPair := range mk {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := f.Path("watch-leak-") + name
			p := mkPair(path)
			require.NoError(t, p.hold(ctx))
			before := countNodes(zc, path)
			wctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
			start := time.Now()
			err := p.wait(wctx)
			cancel()
			if took := time.Since(start); took > 800*time.Millisecond+250*time.Millisecond {
				t.Errorf("waiter returned %v after its ctx began (deadline 800 ms)", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("waiter: %v, want DeadlineExceeded", err)
			}
			ws, n := leftOver(f, path, before, 3*time.Second)
			if len(ws) != 0 {
				t.Errorf("watches left on the server 3 s after the waiter gave up: %v", ws)
			}
			if n != before {
				t.Errorf("ephemeral nodes under %s: %d before the waiter, %d 3 s after it gave up", path, before, n)
			}
		})
	}
}

// countNodes counts the ephemeral nodes under path (lock nodes; the
// container parents the recipes create are the server's to remove).
func countNodes(zc *zk.Conn, path string) int {
	n := 0
	for _, ch := range children(zc, path) {
		p := path + "/" + ch
		if _, st, err := zc.Get(p); err == nil && st.EphemeralOwner != 0 {
			n++
		}
		n += countNodes(zc, p)
	}
	return n
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
	px := f.Proxy()
	sw := f.SessionAt(px.Addrs())
	zc := f.Raw()
	mk := waitPairs(sh, sw)
	for _, name := range []string{"mutex", "rwlock-read-behind-write", "semaphore-2", "exclusive", "leader"} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 25*time.Second)
			path := f.Path("bh-watch-") + name
			p := mk[name](path)
			require.NoError(t, p.hold(ctx))
			before := countNodes(zc, path)
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
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("waiter: %v, want context.Canceled", err)
				}
				if took := time.Since(start); took > 250*time.Millisecond {
					t.Errorf("waiter returned %v after cancel while blackholed", took)
				}
			case <-time.After(3 * time.Second):
				px.Heal()
				t.Fatalf("waiter did not return 3 s after cancel while blackholed")
			}
			px.Heal()
			waitFor(t, 10*time.Second, "the waiter's session to be back", func() bool {
				ep, err := connlink.Of(sw).Epoch(ctx)
				return err == nil && ep.Err() == nil && sw.State().String() != "Suspended"
			})
			if ep2, _ := connlink.Of(sw).Epoch(ctx); ep2.SessionID() != sid {
				t.Skipf("the session was not kept across the blackhole (%x -> %x): nothing to check", sid, ep2.SessionID())
			}
			ws, n := leftOver(f, path, before, 5*time.Second)
			if len(ws) != 0 {
				t.Errorf("watches on the server 5 s after the session came back: %v", ws)
			}
			if n != before {
				t.Errorf("ephemeral nodes under %s: %d before the waiter, %d 5 s after the session came back", path, before, n)
			}
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
		h, _ := rwlock.New(sh, path)
		_, err := h.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		r1, _ := rwlock.New(sw, path)
		r2, _ := rwlock.New(sw, path)
		got2 := make(chan error, 1)
		go func() {
			_, err := r2.ReadLock().Acquire(ctx)
			got2 <- err
			if err == nil {
				_ = r2.ReadLock().Release(context.WithoutCancel(ctx))
			}
		}()
		zc := f.Raw()
		waitFor(t, 5*time.Second, "r2 queued", func() bool { return len(children(zc, path)) == 2 })
		c1, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err = r1.ReadLock().Acquire(c1)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("r1: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // give a wrong watch removal time to reach the server
		require.NoError(t, h.WriteLock().Release(ctx))
		select {
		case err := <-got2:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("r2 not woken 5 s after the writer released: its watch went with r1's")
		}
	})
	t.Run("semaphore", func(t *testing.T) {
		f := f.In(t)
		ctx := ctxT(t, 20*time.Second)
		path := f.Path("shared-sem")
		h, _ := semaphoremutex.NewSemaphore(sh, path, 2)
		l1, err := h.Acquire(ctx)
		require.NoError(t, err)
		_, err = h.Acquire(ctx)
		require.NoError(t, err)
		w1, _ := semaphoremutex.NewSemaphore(sw, path, 2)
		w2, _ := semaphoremutex.NewSemaphore(sw, path, 2)
		c1, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		got1 := make(chan error, 1)
		go func() { _, err := w1.Acquire(c1); got1 <- err }()
		zc := f.Raw()
		waitFor(t, 5*time.Second, "w1 queued", func() bool { return len(children(zc, path+"/locks")) == 1 })
		got2 := make(chan error, 1)
		go func() { _, err := w2.Acquire(ctx); got2 <- err }()
		waitFor(t, 5*time.Second, "w2 queued", func() bool { return len(children(zc, path+"/locks")) == 2 })
		if err := <-got1; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("w1: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, h.ReturnLease(ctx, l1))
		select {
		case err := <-got2:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("w2 got no lease 5 s after one was released")
		}
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
		deadline := time.After(5 * time.Second)
		for {
			select {
			case p := <-ch2:
				if p.Node == l.Path() {
					return
				}
			case <-deadline:
				t.Fatal("the remaining Observe did not see the new leader within 5 s")
			}
		}
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
	for _, cut := range []bool{false, true} {
		name := "connected"
		if cut {
			name = "cancelled-while-disconnected"
		}
		t.Run(name, func(t *testing.T) { massCancel(t, cut) })
	}
}

func massCancel(t *testing.T, cut bool) {
	f := newFixture(t)
	ctx := ctxT(t, 25*time.Second)
	path := f.Path("r2-mass/lock")
	bys := f.Raw()
	px := f.Proxy()
	sA := f.SessionAt(px.Addrs(), conn.WithSessionTimeout(8*time.Second))
	b := f.mutexHeld(ctx, path) // B, another session, holds
	watchCount := func() string {
		m, err := f.Mntr(ctx, 0)
		require.NoError(t, err)
		return m["zk_watch_count"]
	}
	base := watchCount()
	hs := []*mutex.InterProcessMutex{}
	m1, _ := mutex.New(sA, path)
	m2, _ := mutex.New(sA, path, lock.WithLocalHandoff(3, 0))
	hs = append(hs, m1, m2)
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	const n = 24
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := hs[i%2].Acquire(actx)
			errs <- err
		}(i)
	}
	// Every plain waiter has a node; the handoff ones share one.
	waitFor(t, 10*time.Second, "A's waiters queued", func() bool { return len(children(bys, path)) == 1+n/2+1 })
	time.Sleep(300 * time.Millisecond) // let the waiters set their watches; the check below does not rely on it
	t.Logf("watches with the queue: %s (B alone: %s)", watchCount(), base)
	if cut {
		px.Blackhole()
		px.Cut()
		waitFor(t, 5*time.Second, "A suspended", func() bool { return sA.State() == conn.Suspended })
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
	select {
	case <-revoked:
	case <-time.After(5 * time.Second):
		t.Fatal("Revoked not closed")
	}
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
