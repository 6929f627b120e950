package attack_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestReleaseRefusedByServerLeavesLockHeld checks lock's contract
// (go doc ./lock): "Any other error (the server refused the delete) leaves
// the lock held: call Release again", for every recipe, with the refusal
// made by a bystander that takes DELETE off the lock node's parent (its ACL
// is the world's, so anyone may), then gives it back.
func TestReleaseRefusedByServerLeavesLockHeld(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	zc := f.Raw()
	names := []string{"mutex", "mutex-localhandoff", "rwlock-write", "rwlock-read", "semaphoremutex", "semaphore-2", "exclusive", "leader", "multilock"}
	f.Each(t, names, func(t *testing.T, f *fixture, name string) {
		ctx := ctxT(t, 20*time.Second)
		recipe := strings.Replace(name, "localhandoff", "handoff", 1) // newLocker's name
		lk := newLocker(t, recipe, s, f.Path("refused-")+name, 0)
		l, err := lk.Acquire(ctx)
		require.NoError(t, err)
		parent := zkpath.Parent(l.Path())
		_, err = zc.SetACL(parent, zk.WorldACL(zk.PermAll&^zk.PermDelete), -1)
		require.NoError(t, err, "bystander setACL")
		_, err = timed(ctx, 5*time.Second, lk.Release)
		ok := exists(zc, l.Path())
		t.Logf("refused release: err=%v; node exists: %v; lease err: %v", err, ok, l.Err())
		switch {
		case err == nil && ok:
			t.Errorf("Release returned nil, but the node %s is still on the server", l.Path())
		case err == nil:
			t.Errorf("Release returned nil though the server refuses deletes under %s", parent)
		case errors.Is(err, lock.ErrReleasePending):
			t.Errorf("a refusal (known outcome) reported as ErrReleasePending: %v", err)
		case !errors.Is(err, zk.ErrNoAuth):
			t.Errorf("release error does not match zk.ErrNoAuth: %v", err)
		}
		if !ok {
			t.Errorf("node %s gone though deletes are refused", l.Path())
		}
		_, err = zc.SetACL(parent, zkWorld, -1)
		require.NoError(t, err)
		if err := lk.Release(ctx); err != nil {
			t.Errorf("second Release after the ACL is back: %v", err)
		}
		waitFor(t, 5*time.Second, "the node to be gone", func() bool { return !exists(zc, l.Path()) })
	})
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
	newFixture(t).Each(t, []string{"mutex", "rwlock", "semaphoremutex", "semaphore-3", "exclusive", "leader", "multilock"}, func(t *testing.T, f *fixture, name string) {
		ctx := ctxT(t, 25*time.Second)
		px, s := f.ProxiedSession(conn.WithSessionTimeout(2 * time.Second))
		lk := newLocker(t, name, s, f.Root()+"/rel-bh-"+name, 0)
		_, err := lk.Acquire(ctx)
		require.NoError(t, err)
		px.Blackhole()
		// Release runs on this goroutine (mutex and rwlock are owned by
		// it); a watchdog heals the proxy after 5 s so that a hang ends.
		healed := time.AfterFunc(5*time.Second, px.Heal)
		start := time.Now()
		err = lk.Release(context.WithoutCancel(ctx))
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
	forEach(t, []string{"alone", "local-waiter", "no-deadline-alone", "no-deadline"}, func(t *testing.T, f *fixture, name string) {
		localWaiter, nolimit := !strings.HasSuffix(name, "alone"), strings.HasPrefix(name, "no-deadline")
		ctx := ctxT(t, 25*time.Second)
		path := f.Path("r2-relsusp/lock")
		bys := f.Raw()
		px, sA := f.ProxiedSession(conn.WithSessionTimeout(8 * time.Second))
		mA, _ := mutex.New(sA, path, lock.WithLocalHandoff(5, 0))
		g1 := hold(ctx, mA)
		l1 := g1.wait(t, 10*time.Second, "G1")
		if localWaiter {
			hold(ctx, mA)
			waitFor(t, 10*time.Second, "G2 waiting in the process", func() bool { return watched(f, 0, l1.Path()) })
		}
		ep0, err := connlink.Of(sA).Epoch(ctx)
		require.NoError(t, err)
		suspend(t, px, sA)
		if !nolimit {
			g1.relTimeout = 300 * time.Millisecond
		}
		t0 := time.Now()
		err = g1.release()
		took := time.Since(t0)
		still := exists(bys, l1.Path())
		state := sA.State()
		t.Logf("release (deadline %v) while suspended took %v: %v; node still on the server: %v; A's state: %v", g1.relTimeout, took, err, still, state)
		px.Heal()
		if nolimit {
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
	forEach(t, []string{"mutex", "semaphoremutex", "rwlock-write", "rwlock-read", "exclusive"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 40*time.Second)
		rec := &metricsRec{}
		px, s := f.ProxiedSession(conn.WithSuspendedAsLost(), conn.WithMetrics(rec.Hooks()))
		path := f.Path("r3-susp/") + recipe
		lk := newLocker(t, recipe, s, path, 0)
		sid := epochOf(t, s).SessionID()
		l, err := lk.Acquire(ctx)
		require.NoError(t, err)
		lost := l.Lost()
		waitFor(t, 5*time.Second, "lease watched", func() bool { return rec.watches.Load() == 1 })
		px.Cut()
		recv(t, lost, 5*time.Second, "Lost not closed on suspension")
		waitFor(t, 10*time.Second, "reconnected", func() bool { return s.State() == conn.Reconnected })
		if got := epochOf(t, s).SessionID(); got != sid {
			t.Fatalf("session changed (%x -> %x): the cut was too long", sid, got)
		}
		_, err = timed(ctx, 5*time.Second, lk.Release)
		t.Logf("release after suspended loss: %v", err)

		// Another session must get the lock (the node must go); write
		// lock for the rwlock so that a kept read node counts too.
		olk := newLocker(t, strings.Replace(recipe, "rwlock-read", "rwlock-write", 1), f.Session(), path, 1)
		if _, err := timed(ctx, 6*time.Second, acquireErr(olk)); err != nil {
			t.Errorf("another session could not acquire after the release (nodes %v): %v", children(f.Raw(), path), err)
		} else {
			_ = olk.Release(context.WithoutCancel(ctx))
		}
		noWatchesOf(t, f, sid, 3*time.Second, "the session")
		rec.gaugeDrains(t, 3*time.Second)
		rec.expect(t, 1, metrics.LockLost, "", metrics.CauseSuspended, "losses with cause suspended")
	})
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
	trace := newTraceLog()
	defer func() {
		if t.Failed() {
			t.Logf("A's log and states:\n%s", trace.dump())
		}
	}()
	// 30 s: A's quorum timer ends the epoch T/2 after its last answered sync, sent up to T/6 before the blackholes; at 8 s the ~3.7 s until the reconnect outlasted it.
	px, sA := f.ProxiedSession(conn.WithSessionTimeout(30*time.Second), oneAttempt(20*time.Millisecond),
		conn.WithLogger(trace.logger()), conn.WithMetrics(trace.hooks()))
	mA, _ := mutex.New(sA, path)
	mB, _ := mutex.New(f.Session(), path)
	mC, _ := mutex.New(f.Session(), path)
	_, err := mB.Acquire(ctx)
	require.NoError(t, err)
	err = createLostInBlackhole(t, ctx, px, bys, path, 2, acquireErr(mA), trace.note)
	t.Logf("first acquire through the blackholed proxy: %v (create pending: %v)", err, errors.Is(err, lock.ErrCreatePending))
	if !errors.Is(err, lock.ErrCreatePending) {
		t.Fatalf("want the first acquire to end with lock.ErrCreatePending, got %v", err)
	}
	t.Logf("nodes after the failed acquire: %v", children(bys, path))
	waitFor(t, 10*time.Second, "the lost node deleted in the background", func() bool {
		return len(children(bys, path)) == 1
	})
	// A acquires again at once, B still holding.
	ha := hold(ctx, mA)
	waitFor(t, 10*time.Second, "A's new node queued", func() bool {
		return len(children(bys, path)) >= 2 || len(ha.got) > 0 || len(ha.failed) > 0
	})
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
	l, ok := ha.granted(t, 15*time.Second, "A's second acquire")
	if !ok {
		t.Fatalf("A's second acquire never granted; nodes %v, C in: %v", children(bys, path), cIn.Load())
	}
	t.Logf("A granted on %s (epoch 0x%x)", l.Path(), l.Epoch().SessionID())
	trace.note("A granted on %s (epoch 0x%x)", l.Path(), l.Epoch().SessionID())
	// Let the background search run its course while A holds.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-l.Lost():
			trace.note("A's lease lost: %v", l.Err())
			t.Fatalf("A's lease lost while held (its node deleted?): nodes %v; cause: %v; epoch 0x%x err %v",
				children(bys, path), l.Err(), l.Epoch().SessionID(), l.Epoch().Err())
		default:
		}
		if cIn.Load() {
			t.Fatalf("C entered while A holds: two holders; nodes %v", children(bys, path))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("queue while A holds: %v", children(bys, path))
	require.NoError(t, ha.release())
	require.NoError(t, recv(t, cch, 10*time.Second, "C never granted after A's release: the lost node stayed? nodes %v", nodes{bys, path}), "C")
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
}
