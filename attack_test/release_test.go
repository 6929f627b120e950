package attack_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

type held struct {
	lease   *conn.Lease
	release func(context.Context) error
}

// TestReleaseRefusedByServerLeavesLockHeld checks lock's contract
// (go doc ./lock): "Any other error (the server refused the delete) leaves
// the lock held: call Release again", for every recipe, with the refusal
// made by a bystander that takes DELETE off the lock node's parent (its ACL
// is the world's, so anyone may), then gives it back.
func TestReleaseRefusedByServerLeavesLockHeld(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	zc := f.Raw()
	recipes := []struct {
		name string
		take func(ctx context.Context, path string) (held, error)
	}{
		{"mutex", func(ctx context.Context, path string) (held, error) {
			m, err := mutex.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := m.Acquire(ctx)
			return held{l, m.Release}, err
		}},
		{"mutex-localhandoff", func(ctx context.Context, path string) (held, error) {
			m, err := mutex.New(s, path, lock.WithLocalHandoff(4, 0))
			if err != nil {
				return held{}, err
			}
			l, err := m.Acquire(ctx)
			return held{l, m.Release}, err
		}},
		{"rwlock-write", func(ctx context.Context, path string) (held, error) {
			rw, err := rwlock.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := rw.WriteLock().Acquire(ctx)
			return held{l, rw.WriteLock().Release}, err
		}},
		{"rwlock-read", func(ctx context.Context, path string) (held, error) {
			rw, err := rwlock.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := rw.ReadLock().Acquire(ctx)
			return held{l, rw.ReadLock().Release}, err
		}},
		{"semaphoremutex", func(ctx context.Context, path string) (held, error) {
			m, err := semaphoremutex.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := m.Acquire(ctx)
			return held{l, m.Release}, err
		}},
		{"semaphore-2", func(ctx context.Context, path string) (held, error) {
			sem, err := semaphoremutex.NewSemaphore(s, path, 2)
			if err != nil {
				return held{}, err
			}
			l, err := sem.Acquire(ctx)
			return held{l, func(ctx context.Context) error { return sem.ReturnLease(ctx, l) }}, err
		}},
		{"exclusive", func(ctx context.Context, path string) (held, error) {
			x, err := exclusive.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := x.Acquire(ctx)
			return held{l, x.Release}, err
		}},
		{"leader", func(ctx context.Context, path string) (held, error) {
			e, err := leader.New(s, path, "me")
			if err != nil {
				return held{}, err
			}
			l, err := e.Campaign(ctx)
			return held{l, e.Resign}, err
		}},
		{"multilock", func(ctx context.Context, path string) (held, error) {
			a, err := mutex.New(s, path)
			if err != nil {
				return held{}, err
			}
			b, err := semaphoremutex.New(s, path+"-other")
			if err != nil {
				return held{}, err
			}
			m, err := multilock.New(a, b)
			if err != nil {
				return held{}, err
			}
			ls, err := m.Acquire(ctx)
			if err != nil {
				return held{}, err
			}
			for _, l := range ls {
				if zkpath.Parent(l.Path()) == path {
					return held{l, m.Release}, nil
				}
			}
			return held{}, errors.New("no lease under " + path)
		}},
	}
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := f.Path("refused-") + r.name
			h, err := r.take(ctx, path)
			require.NoError(t, err)
			parent := zkpath.Parent(h.lease.Path())
			_, err = zc.SetACL(parent, zk.WorldACL(zk.PermAll&^zk.PermDelete), -1)
			require.NoError(t, err, "bystander setACL")
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = h.release(rctx)
			cancel()
			exists, _, _ := zc.Exists(h.lease.Path())
			t.Logf("refused release: err=%v; node exists: %v; lease err: %v", err, exists, h.lease.Err())
			switch {
			case err == nil && exists:
				t.Errorf("Release returned nil, but the node %s is still on the server", h.lease.Path())
			case err == nil:
				t.Errorf("Release returned nil though the server refuses deletes under %s", parent)
			case errors.Is(err, lock.ErrReleasePending):
				t.Errorf("a refusal (known outcome) reported as ErrReleasePending: %v", err)
			case !errors.Is(err, zk.ErrNoAuth):
				t.Errorf("release error does not match zk.ErrNoAuth: %v", err)
			}
			if !exists {
				t.Errorf("node %s gone though deletes are refused", h.lease.Path())
			}
			_, err = zc.SetACL(parent, zk.WorldACL(zk.PermAll), -1)
			require.NoError(t, err)
			if err := h.release(ctx); err != nil {
				t.Errorf("second Release after the ACL is back: %v", err)
			}
			waitFor(t, 5*time.Second, "the node to be gone", func() bool {
				ok, _, _ := zc.Exists(h.lease.Path())
				return !ok
			})
		})
	}
}

// TestReleaseWithoutCancelWhileBlackholedReturns checks the README's
// own pattern, "Release even if ctx is cancelled by now: the lock node must
// go. ... m.Release(context.WithoutCancel(ctx))", against lock's contract
// "ErrReleasePending when the delete's outcome is unknown", with the
// connection blackholed for good (Proxy.Blackhole, no Heal): a Release with
// a context that never ends must still return (ErrReleasePending, or nil
// once the epoch is taken as lost) within the session timeout (2 s here)
// plus a margin, for every recipe, not hang.
func TestReleaseWithoutCancelWhileBlackholedReturns(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		take func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error)
	}{
		{"mutex", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			m, _ := mutex.New(s, path)
			_, err := m.Acquire(ctx)
			return m.Release, err
		}},
		{"rwlock", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			rw, _ := rwlock.New(s, path)
			_, err := rw.WriteLock().Acquire(ctx)
			return rw.WriteLock().Release, err
		}},
		{"semaphoremutex", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			m, _ := semaphoremutex.New(s, path)
			_, err := m.Acquire(ctx)
			return m.Release, err
		}},
		{"semaphore-3", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			sem, _ := semaphoremutex.NewSemaphore(s, path, 3)
			l, err := sem.Acquire(ctx)
			return func(ctx context.Context) error { return sem.ReturnLease(ctx, l) }, err
		}},
		{"exclusive", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			x, _ := exclusive.New(s, path)
			_, err := x.Acquire(ctx)
			return x.Release, err
		}},
		{"leader", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			e, _ := leader.New(s, path, "x")
			_, err := e.Campaign(ctx)
			return e.Resign, err
		}},
		{"multilock", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			a, _ := mutex.New(s, path+"/a")
			b, _ := semaphoremutex.New(s, path+"/b")
			m, _ := multilock.New(a, b)
			_, err := m.Acquire(ctx)
			return m.Release, err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := f.In(t)
			ctx := ctxT(t, 25*time.Second)
			px := f.Proxy()
			s := f.SessionAt(px.Addrs(), conn.WithSessionTimeout(2*time.Second))
			release, err := tc.take(ctx, s, f.Root()+"/rel-bh-"+tc.name)
			require.NoError(t, err)
			px.Blackhole()
			// Release runs on this goroutine (mutex and rwlock are owned by
			// it); a watchdog heals the proxy after 5 s so that a hang ends.
			healed := time.AfterFunc(5*time.Second, px.Heal)
			start := time.Now()
			err = release(context.WithoutCancel(ctx))
			took := time.Since(start)
			t.Logf("Release after %v: %v", took.Round(time.Millisecond), err)
			if !healed.Stop() {
				t.Fatalf("Release with a ctx that never ends ran %v into a blackhole, past the 5 s watchdog (session timeout 2 s)", took)
			}
			if err != nil && !errors.Is(err, lock.ErrReleasePending) {
				t.Errorf("Release while blackholed: %v, want nil or ErrReleasePending", err)
			}
			px.Heal()
		})
	}
}

// TestReleaseWhileSuspendedReportsPendingDeletion checks mutex's
// Release: "lock.ErrReleasePending when the node's deletion could not be
// confirmed (the connection is down or ctx ended) while the session lives:
// the goroutine no longer holds the mutex, but other processes may see it
// held until the background deletion succeeds", and lock.ErrReleasePending's
// "a release whose deletion could not be confirmed (the connection was
// lost ...) while the session lives". The holder's connection is reset and
// its reconnects blackholed (Suspended), then it releases; the node is
// still on the server (a bystander sees it). With no local waiter, and with
// a goroutine of the same session waiting in the process (WithLocalHandoff),
// which the docs say makes the release delete the node rather than hand it
// on, Release (300 ms deadline) must return an error matching
// lock.ErrReleasePending. Without a deadline the release outlives the epoch
// (ended by the quorum timer) and returns nil while the node is still on the
// server (the doc's "A lease lost while held (the session expired) releases
// without error" says "expired"; the ZooKeeper session has not): the node
// must still go, with the server's expiry, within T.
func TestReleaseWhileSuspendedReportsPendingDeletion(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		localWaiter, nolimit bool
	}{{"alone", false, false}, {"local-waiter", true, false}, {"no-deadline-alone", false, true}, {"no-deadline", true, true}} {
		localWaiter, name := tc.localWaiter, tc.name
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := ctxT(t, 25*time.Second)
			path := f.Path("r2-relsusp/lock")
			bys := f.Raw()
			px := f.Proxy()
			sA := f.SessionAt(px.Addrs(), conn.WithSessionTimeout(8*time.Second))
			mA, _ := mutex.New(sA, path, lock.WithLocalHandoff(5, 0))
			g1 := hold(ctx, mA)
			l1 := g1.wait(t, 10*time.Second, "G1")
			if localWaiter {
				g2 := hold(ctx, mA)
				waitFor(t, 10*time.Second, "G2 waiting in the process", func() bool { return watched(f, 0, l1.Path()) })
				_ = g2
			}
			ep0, err := connlink.Of(sA).Epoch(ctx)
			require.NoError(t, err)
			px.Blackhole()
			px.Cut()
			waitFor(t, 10*time.Second, "A suspended", func() bool { return sA.State() == conn.Suspended })
			if !tc.nolimit {
				g1.relTimeout = 300 * time.Millisecond
			}
			t0 := time.Now()
			err = g1.release()
			took := time.Since(t0)
			ok, _, exErr := bys.Exists(l1.Path())
			still := exErr == nil && ok
			state := sA.State()
			t.Logf("release (deadline %v) while suspended took %v: %v; node still on the server: %v; A's state: %v", g1.relTimeout, took, err, still, state)
			px.Heal()
			if tc.nolimit {
				// The release outlives the epoch (the quorum timer ends it
				// 7T/12 after the last answered sync) and returns nil, as for a
				// lease lost while held; the ZooKeeper session has not
				// expired and the node is still there: it must go within T.
				if err != nil && !errors.Is(err, lock.ErrReleasePending) {
					t.Fatalf("release: %v", err)
				}
				end := time.Now().Add(12 * time.Second)
				for {
					ok, st, err := bys.Exists(l1.Path())
					if err == nil && !ok {
						break
					}
					if time.Now().After(end) {
						ep1, _ := connlink.Of(sA).Epoch(ctx)
						var sid1 int64
						if ep1 != nil {
							sid1 = ep1.SessionID()
						}
						owner := int64(0)
						if st != nil {
							owner = st.EphemeralOwner
						}
						t.Fatalf("released node %s still on the server 12 s after the release (T = 8 s): its owner 0x%x, the released epoch's session 0x%x, A's current epoch's session 0x%x; nodes %v",
							l1.Path(), owner, ep0.SessionID(), sid1, children(bys, path))
					}
					time.Sleep(50 * time.Millisecond)
				}
				return
			}
			if still && !errors.Is(err, lock.ErrReleasePending) {
				t.Fatalf("Release returned %v while its node is still on the server (deletion not confirmed, session alive, state %v): want lock.ErrReleasePending", err, state)
			}
		})
	}
}

// TestSuspendedAsLostReleaseLeavesNode: under conn.WithSuspendedAsLost
// a holder is told its lock is lost as soon as the connection is suspended,
// but the ZooKeeper session survives a short cut, and with it the lock node.
// The holder then does what package lock says: "Release after loss (Lost
// closed) returns nil: the node went with its session, or someone deleted
// it; there is nothing left to release, and the handle can acquire again",
// and docs/safety.md guarantee 5, "Nothing of ours is left behind", and
// guarantee 2 ("after any number of acquire/release cycles on an open
// session the server holds no watch of that session on lock nodes").
// After the Release the node must go (another session acquires), the
// server must hold no watch of the session, the watches gauge
// (metrics.Hooks.Watches) must be back to 0, and the loss must be counted
// once with cause "suspended".
func TestSuspendedAsLostReleaseLeavesNode(t *testing.T) {
	for _, recipe := range []string{"mutex", "semaphoremutex", "rwlock-write", "rwlock-read", "exclusive"} {
		t.Run(recipe, func(t *testing.T) {
			f := newFixture(t)
			ctx := ctxT(t, 40*time.Second)
			px := f.Proxy()
			rec := &metricsRec{}
			s := f.SessionAt(px.Addrs(), conn.WithSuspendedAsLost(), conn.WithMetrics(rec.Hooks()))
			other := f.Session()
			zc := f.Raw()
			path := f.Path("r3-susp/") + recipe
			mk := func(s *conn.Session) locker {
				switch recipe {
				case "mutex":
					m, _ := mutex.New(s, path)
					return m
				case "semaphoremutex":
					m, _ := semaphoremutex.New(s, path)
					return m
				case "rwlock-write":
					rw, _ := rwlock.New(s, path)
					return rw.WriteLock()
				case "rwlock-read":
					rw, _ := rwlock.New(s, path)
					return rw.ReadLock()
				default:
					m, _ := exclusive.New(s, path)
					return m
				}
			}
			lk := mk(s)
			sid := epochOf(t, s).SessionID()
			l, err := lk.Acquire(ctx)
			require.NoError(t, err)
			lost := l.Lost()
			waitFor(t, 5*time.Second, "lease watched", func() bool { return rec.watches.Load() == 1 })
			px.Cut()
			select {
			case <-lost:
			case <-time.After(5 * time.Second):
				t.Fatal("Lost not closed on suspension")
			}
			waitFor(t, 10*time.Second, "reconnected", func() bool { return s.State() == conn.Reconnected })
			if got := epochOf(t, s).SessionID(); got != sid {
				t.Fatalf("session changed (%x -> %x): the cut was too long", sid, got)
			}
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			err = lk.Release(rctx)
			rcancel()
			t.Logf("release after suspended loss: %v", err)

			// Another session must get the lock (the node must go); write
			// lock for the rwlock so that a kept read node counts too.
			var olk locker
			if recipe == "rwlock-read" {
				rw, _ := rwlock.New(other, path)
				olk = rw.WriteLock()
			} else {
				olk = mk(other)
			}
			octx, ocancel := context.WithTimeout(ctx, 6*time.Second)
			defer ocancel()
			ol, oerr := olk.Acquire(octx)
			if oerr != nil {
				t.Errorf("another session could not acquire after the release (nodes %v): %v", children(zc, path), oerr)
			} else {
				_ = olk.Release(context.WithoutCancel(ctx))
				_ = ol
			}
			if !eventually(3*time.Second, func() bool { return len(sessionWatches(t, f, 0, sid)) == 0 }) {
				w := sessionWatches(t, f, 0, sid)
				t.Errorf("server still holds watches of the session: %v", w)
			}
			if !eventually(3*time.Second, func() bool { return rec.watches.Load() == 0 }) {
				g := rec.watches.Load()
				t.Errorf("watches gauge %d, want 0", g)
			}
			if n := rec.count(metrics.LockLost, "", metrics.CauseSuspended); n != 1 {
				t.Errorf("losses with cause suspended: %d, want 1 (%s)", n, rec.dump())
			}
		})
	}
}

// TestCreatePendingThenReacquireKeepsNewNode checks lock's
// ErrCreatePending: "The node, if it exists, is not left for the session's
// life: a goroutine bound to the session keeps looking for it and deletes it
// ... Acquire again at will", combined with an immediate re-acquire through
// the same handle (same session): the background search for the lost node
// by its unique id must not take the new acquire's node for it (two
// holders), and the lost node must go. Session A (through a proxy, a
// retry policy of one attempt) queues behind B's hold; its create's answer
// is blackholed; once its Acquire fails, the proxy heals and A acquires
// again while B still holds; B releases; A must get the lock, its node must
// survive while it holds, and C, queued behind, must not enter.
func TestCreatePendingThenReacquireKeepsNewNode(t *testing.T) {
	f := newFixture(t, zktest.WithTickTime(2*time.Second)) // sessions up to 40 s
	path := f.Path("r2-pending/lock")
	ctx := ctxT(t, 29*time.Second)
	bys := f.Raw()
	px := f.Proxy()
	trace := newTraceLog()
	defer func() {
		if t.Failed() {
			t.Logf("A's log and states:\n%s", trace.dump())
		}
	}()
	// 30 s: A's quorum timer ends the epoch T/2 after its last answered sync, sent up to T/6 before the blackholes; at 8 s the ~3.7 s until the reconnect outlasted it.
	sA := f.SessionAt(px.Addrs(), conn.WithSessionTimeout(30*time.Second),
		conn.WithRetry(10*time.Millisecond, 20*time.Millisecond, 1),
		conn.WithLogger(trace.logger()), conn.WithMetrics(trace.hooks()))
	sB := f.Session()
	sC := f.Session()
	mA, _ := mutex.New(sA, path)
	mB, _ := mutex.New(sB, path)
	mC, _ := mutex.New(sC, path)
	_, err := mB.Acquire(ctx)
	require.NoError(t, err)
	px.BlackholeAfterNextWrite()
	trace.note("blackhole after next write")
	ech := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 12*time.Second)
		defer cancel()
		_, err := mA.Acquire(actx)
		ech <- err
	}()
	waitFor(t, 10*time.Second, "A's lost create on the server", func() bool { return len(children(bys, path)) >= 2 })
	lost := children(bys, path)
	// The connection is reset, and the reconnect's handshake and the search
	// go into a new blackhole for a while.
	trace.note("lost create seen: %v; heal, blackhole", lost)
	px.Heal()
	px.Blackhole()
	select {
	case err = <-ech:
	case <-time.After(2500 * time.Millisecond):
		trace.note("heal after 2.5s")
		px.Heal()
		err = <-ech
	}
	px.Heal()
	trace.note("first acquire ended: %v; healed", err)
	t.Logf("nodes with the lost create: %v", lost)
	t.Logf("first acquire through the blackholed proxy: %v (create pending: %v)", err, errors.Is(err, lock.ErrCreatePending))
	if !errors.Is(err, lock.ErrCreatePending) {
		t.Fatalf("want the first acquire to end with lock.ErrCreatePending, got %v", err)
	}
	t.Logf("nodes after the failed acquire: %v", children(bys, path))
	waitFor(t, 10*time.Second, "the lost node deleted in the background", func() bool {
		return len(children(bys, path)) == 1
	})
	// A acquires again at once, B still holding.
	type res struct {
		l   *conn.Lease
		err error
	}
	ach := make(chan res, 1)
	relA := make(chan chan error)
	go func() {
		l, err := mA.Acquire(ctx)
		ach <- res{l, err}
		if err == nil {
			done := <-relA
			done <- mA.Release(ctx)
		}
	}()
	waitFor(t, 10*time.Second, "A's new node queued", func() bool { return len(children(bys, path)) >= 2 || len(ach) > 0 })
	t.Logf("after A's re-acquire: %v", children(bys, path))
	// C queues behind A's new node.
	var cIn atomic.Bool
	cch := make(chan error, 1)
	go func() {
		_, err := mC.Acquire(ctx)
		cIn.Store(err == nil)
		if err == nil {
			err = mC.Release(ctx)
		}
		cch <- err
	}()
	waitFor(t, 10*time.Second, "C queued", func() bool { return len(children(bys, path)) >= 3 })
	t.Logf("queue: %v", children(bys, path))
	trace.note("queue %v; B releases", children(bys, path))
	require.NoError(t, mB.Release(ctx))
	var r res
	select {
	case r = <-ach:
	case <-time.After(15 * time.Second):
		t.Fatalf("A's second acquire never granted; nodes %v, C in: %v", children(bys, path), cIn.Load())
	}
	if r.err != nil {
		t.Fatalf("A's second acquire: %v", r.err)
	}
	t.Logf("A granted on %s (epoch 0x%x)", r.l.Path(), r.l.Epoch().SessionID())
	trace.note("A granted on %s (epoch 0x%x)", r.l.Path(), r.l.Epoch().SessionID())
	// Let the background search run its course while A holds.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.l.Lost():
			trace.note("A's lease lost: %v", r.l.Err())
			t.Fatalf("A's lease lost while held (its node deleted?): nodes %v; cause: %v; epoch 0x%x err %v",
				children(bys, path), r.l.Err(), r.l.Epoch().SessionID(), r.l.Epoch().Err())
		default:
		}
		if cIn.Load() {
			t.Fatalf("C entered while A holds: two holders; nodes %v", children(bys, path))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("queue while A holds: %v", children(bys, path))
	rel := make(chan error)
	relA <- rel
	require.NoError(t, <-rel)
	select {
	case err := <-cch:
		require.NoError(t, err, "C")
	case <-time.After(10 * time.Second):
		t.Fatalf("C never granted after A's release: the lost node stayed? nodes %v", children(bys, path))
	}
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
}
