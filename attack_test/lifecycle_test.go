package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
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
		path := f.Path("relsusp/lock")
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
		path := f.Path("susp/") + recipe
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
	path := f.Path("pending/lock")
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

// TestExpiryMidDrainMetrics: B holds the lock; four goroutines of
// session A wait (each with its own handle); A's ZooKeeper session is
// expired by the server (zktest.ExpireEpoch) while they wait, so, as package
// lock says, "A session lost while waiting is not an error: Acquire starts
// over in the next one". B releases, and A's goroutines are granted one
// after the other, each watching its lease's Lost, and release.
//
// Checked: never two of them holding at once (docs/safety.md guarantee 1);
// every Acquire granted; metrics.LockWait "One per call" with
// outcome granted (4 of them, nothing else); the watches gauge back to 0
// ("It rises with the waiters and comes back down as they are granted or
// give up; a count that only grows is watches left behind"); and no watch
// of A's session left on the server (guarantee 2).
func TestExpiryMidDrainMetrics(t *testing.T) {
	recipes := []string{"mutex", "mutex-handoff", "semaphoremutex", "semaphoremutex-handoff", "rwlock", "exclusive", "leader"}
	forEach(t, recipes, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 60*time.Second)
		rec := &metricsRec{}
		sa := f.Session(conn.WithMetrics(rec.Hooks()))
		path := f.Path("exp/") + recipe
		bh := hold(ctx, newLocker(t, recipe, f.Session(), path, 100))
		bh.wait(t, 60*time.Second, "bh")
		const n = 4
		var occ occupancy
		var granted atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			lk := newLocker(t, recipe, sa, path, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := lk.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				granted.Add(1)
				occ.enter()
				if _, ok := within(l.Lost(), 50*time.Millisecond); ok {
					errs <- fmt.Errorf("lease lost while held: %v", l.Err())
				}
				occ.leave()
				if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
					errs <- fmt.Errorf("release: %w", err)
				}
			}()
		}
		waitFor(t, 10*time.Second, "A's waiters watching", func() bool { return rec.watches.Load() >= 1 })
		time.Sleep(200 * time.Millisecond) // not a race fix: give every waiter time to queue before the expiry
		ep := epochOf(t, sa)
		f.Expire(ctx, ep)
		recv(t, ep.Done(), 10*time.Second, "epoch not ended")
		ep2 := epochOf(t, sa)
		waitFor(t, 10*time.Second, "A's waiters watching again", func() bool {
			return len(sessionWatches(t, f, 0, epochOf(t, sa).SessionID())) >= 1
		})
		time.Sleep(200 * time.Millisecond) // not a race fix: let the waiters queue again before the handoff
		require.NoError(t, bh.release())
		if !doneWithin(&wg, 30*time.Second) {
			t.Fatalf("A's waiters not all granted: %d of %d; nodes %v", granted.Load(), n, children(f.Raw(), path))
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if m := occ.peak.Load(); m > 1 {
			t.Errorf("%d of A's goroutines held at once", m)
		}
		rec.expect(t, n, metrics.LockWait, "", metrics.OutcomeGranted, "waits granted")
		rec.expect(t, n, metrics.LockWait, "", "", "waits reported, one per call,")
		rec.gaugeDrains(t, 3*time.Second)
		noWatchesOf(t, f, ep2.SessionID(), 3*time.Second, "A's session")
	})
}

// TestInterleavedDrainMassCancelBystander attacks CHANGELOG's
// "Draining one session's waiters after plain deletes ... A woken waiter now
// decides from its session's latest listing less the nodes the session knows
// have left": 45 waiters of three sessions, interleaved in one queue (A, B,
// C, A, ...), each its own handle, behind a holder of a fourth session, on
// recipes whose releases are plain deletes (revocable mutex and write lock,
// leader's Resign) and on the sealed mutex. At once: a third of them cancel,
// a bystander deletes a sixth of the nodes, the holder releases. Checked:
//   - lock's "Acquire blocks until the lock is held or ctx ends; one whose ctx
//     ends first returns an error matching ctx.Err()": every cancelled waiter
//     fails with context.Canceled, none is granted, and every other returns;
//   - mutual exclusion (docs/safety.md guarantee 1): no surviving grant while
//     another survivor holds (a waiter whose node the bystander deleted is
//     excused, as "Deleting a holder's node lets the next waiter in"; for the
//     leader, which queues again, it is not);
//   - FIFO (mutex: "contenders are granted in the order their nodes were
//     created"; leader: "Participants become leader in the order they
//     campaigned"): survivors granted in the order of their nodes;
//   - nothing left: no node under the path, no watch of the three sessions.
//
// Passes 0 and 1 cancel and delete before the release; pass 2 does all
// three at the same time (a cancelled waiter may then be granted, and is
// then a holder like any other).
func TestInterleavedDrainMassCancelBystander(t *testing.T) {
	forEach(t, []string{"mutex-revocable", "leader", "rwlock-revocable", "mutex"}, func(t *testing.T, f *fixture, recipe string) {
		ss := []*conn.Session{f.Session(), f.Session(), f.Session()}
		hs := f.Session()
		for pass := 0; pass < 3; pass++ {
			path := fmt.Sprintf("%s/drain/%s-%d", f.Root(), recipe, pass)
			ws := runDrain(t, f, recipe, path, ss, hs, 45, int64(pass+1), pass == 2)
			var surv []*drainWaiter
			for i, w := range ws {
				switch w.fate {
				case "cancelled":
					if pass == 2 {
						// cancelled while the release ran: granted or ctx's error
						if w.lease == nil && !errors.Is(w.err, context.Canceled) {
							t.Errorf("pass %d waiter %d (%s) cancelled: err %v", pass, i, w.node, w.err)
						}
					} else if w.lease != nil || !errors.Is(w.err, context.Canceled) {
						t.Errorf("pass %d waiter %d (%s) cancelled before the release: lease %v err %v", pass, i, w.node, w.lease != nil, w.err)
					}
				case "survivor":
					if w.err != nil || w.lease == nil {
						t.Errorf("pass %d waiter %d (%s) survivor: err %v", pass, i, w.node, w.err)
						continue
					}
					surv = append(surv, w)
				case "deleted":
					if recipe == "leader" && (w.err != nil || w.lease == nil) {
						t.Errorf("pass %d waiter %d (%s) deleted, must lead later: err %v", pass, i, w.node, w.err)
					}
				}
				if w.overlap != "" && !(w.fate == "deleted" && recipe != "leader") {
					t.Errorf("pass %d: two holders: %s (%s) granted while %sheld", pass, w.node, w.fate, w.overlap)
				}
			}
			byGrant := append([]*drainWaiter(nil), surv...)
			sort.Slice(byGrant, func(i, j int) bool { return byGrant[i].grantIdx < byGrant[j].grantIdx })
			for i := range surv {
				if surv[i] != byGrant[i] {
					var a, b []string
					for j := range surv {
						a = append(a, surv[j].node[strings.LastIndexByte(surv[j].node, '-')+1:])
						b = append(b, byGrant[j].node[strings.LastIndexByte(byGrant[j].node, '-')+1:])
					}
					t.Errorf("pass %d: survivors not granted FIFO:\nqueued  %v\ngranted %v", pass, a, b)
					break
				}
			}
			waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(f.Raw(), path)) == 0 })
			for i, s := range ss {
				noWatchesLeft(t, f, s, 5*time.Second, fmt.Sprintf("pass %d: session %d", pass, i))
			}
		}
	})
}

// TestOneAttemptDrainUnderCuts attacks the drain of one session's
// waiters after plain deletes (CHANGELOG) with conn.WithRetry's
// maxAttempts 1 and lost answers: session A (through a proxy, one attempt
// per request) and session B queue 24 waiters interleaved behind a holder
// of session D; revocable mutex and leader (plain deletes). While the queue
// drains, new A acquires keep coming, and the proxy loses the answer of one
// of A's next few requests (BlackholeAfterWrites) and heals once it fired,
// five times. Checked:
//   - never two holders (docs/safety.md guarantee 1; no session ends here);
//   - every Acquire returns (lock: "Acquire blocks until the lock is held or
//     ctx ends"), every B waiter is granted;
//   - lock.ErrCreatePending and cancelled acquires leave nothing: "its node is
//     never left in the queue for the life of the session": once all have
//     returned and released, no node is left under the path, and neither A
//     nor B keeps a watch on the server.
func TestOneAttemptDrainUnderCuts(t *testing.T) {
	forEach(t, []string{"mutex-revocable", "leader"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 120*time.Second)
		px, sa := f.ProxiedSession(oneAttempt(50 * time.Millisecond))
		sb := f.Session()
		zc := f.Raw()
		path := f.Path("one/") + recipe
		h := hold(ctx, newLocker(t, recipe, f.Session(), path, 999))
		h.wait(t, 60*time.Second, "h")
		var mu sync.Mutex
		holders := 0
		var overlaps []string
		var errsA []string
		var grantedB, grantedA, failedA atomic.Int32
		var wg sync.WaitGroup
		waiter := func(s *conn.Session, who string, i int, wctx context.Context) {
			defer wg.Done()
			lk := newLocker(t, recipe, s, path, i)
			l, err := lk.Acquire(wctx)
			if err != nil {
				mu.Lock()
				if who == "B" {
					overlaps = append(overlaps, fmt.Sprintf("B waiter %d failed: %v", i, err))
				} else {
					errsA = append(errsA, err.Error())
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Logf("A waiter %d: %v (ErrConnectionLoss %v, ErrCreatePending %v, ErrClosed %v)", i, err,
							errors.Is(err, conn.ErrConnectionLoss), errors.Is(err, lock.ErrCreatePending), errors.Is(err, conn.ErrClosed))
					}
				}
				mu.Unlock()
				failedA.Add(1)
				return
			}
			mu.Lock()
			holders++
			if holders > 1 {
				overlaps = append(overlaps, fmt.Sprintf("%s waiter %d granted %s while %d others hold", who, i, l.Path(), holders-1))
			}
			mu.Unlock()
			if who == "B" {
				grantedB.Add(1)
			} else {
				grantedA.Add(1)
			}
			within(l.Lost(), time.Millisecond)
			mu.Lock()
			holders--
			mu.Unlock()
			_ = lk.Release(context.WithoutCancel(ctx))
		}
		const n = 24
		nB := 0
		for i := 0; i < n; i++ {
			s, who := sa, "A"
			if i%2 == 1 {
				s, who = sb, "B"
				nB++
			}
			before := len(children(zc, path))
			wg.Add(1)
			go waiter(s, who, i, ctx)
			waitFor(t, 10*time.Second, "queued", func() bool { return len(children(zc, path)) > before })
		}
		// churn: new A acquires with short deadlines while the faults come
		stop := make(chan struct{})
		var churn sync.WaitGroup
		churn.Add(1)
		go func() {
			defer churn.Done()
			for i := 1000; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(40 * time.Millisecond):
				}
				wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				wg.Add(1)
				go func(i int) { defer cancel(); waiter(sa, "A", i, wctx) }(i)
			}
		}()
		require.NoError(t, h.release())
		rng := rand.New(rand.NewSource(4))
		for k := 0; k < 5; k++ {
			px.BlackholeAfterWrites(1 + rng.Intn(4))
			if !eventually(5*time.Second, px.Blackholed) {
				px.BlackholeAfterWrites(0)
				t.Logf("fault %d did not fire", k)
				continue
			}
			px.Heal()
			ep := epochOf(t, sa) // wait for the reconnect
			_ = ep
		}
		close(stop)
		churn.Wait()
		if !doneWithin(&wg, 60*time.Second) {
			t.Fatalf("acquires stuck: B granted %d of %d; nodes %v", grantedB.Load(), nB, sortedBySeq(zc, path))
		}
		mu.Lock()
		for _, o := range overlaps {
			t.Error(o)
		}
		kinds := map[string]int{}
		for _, e := range errsA {
			k := e
			if i := strings.LastIndex(e, ": "); i >= 0 {
				k = e[i+2:]
			}
			kinds[k]++
		}
		mu.Unlock()
		t.Logf("A granted %d, failed %d (%v); B granted %d of %d", grantedA.Load(), failedA.Load(), kinds, grantedB.Load(), nB)
		if !eventually(20*time.Second, func() bool { return len(children(zc, path)) == 0 }) {
			t.Errorf("nodes left after every acquire returned and released: %v", sortedBySeq(zc, path))
		}
		for name, s := range map[string]*conn.Session{"A": sa, "B": sb} {
			noWatchesLeft(t, f, s, 5*time.Second, "session "+name)
		}
	})
}

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
	f, ctx := setUp(t, 25*time.Second)
	path := f.Path("deadline/lock")
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
		path := f.Path("grantread/") + recipe
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

// TestCloseDuringAcquireAcrossHandoffAndSharedListing: ErrClosed "is
// returned by every call made after Close"; LockLost cause closed: "the
// session was closed while the lease was held". One session holds a
// local-handoff mutex while, with no deadline, a local waiter, a plain
// handle on the same path and a multilock (behind another session) wait:
// Close ends every wait within 2 s with ErrClosed and leaves no node of
// ours; the holders' losses are reported as closed, the waits not granted.
func TestCloseDuringAcquireAcrossHandoffAndSharedListing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rec, s := f.metered()
	path := f.Path("closeacq/m")
	hm, err := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	pm, err := mutex.New(s, path)
	require.NoError(t, err)
	l1, err := hm.Acquire(ctx)
	require.NoError(t, err)
	_ = l1.Lost()
	other := f.Session()
	osm, _ := semaphoremutex.New(other, f.Path("closeacq/sm"))
	_, err = osm.Acquire(ctx)
	require.NoError(t, err)
	sm, _ := semaphoremutex.New(s, f.Path("closeacq/sm"))
	mm, _ := mutex.New(s, f.Path("closeacq/a"))
	ml, err := multilock.New(sm, mm)
	require.NoError(t, err)
	errs := make(chan error, 3)
	go func() { errs <- acquireErr(hm)(ctx) }()
	go func() { errs <- acquireErr(pm)(ctx) }()
	go func() { _, err := ml.Acquire(ctx); errs <- err }()
	waitFor(t, 10*time.Second, "the plain handle and the multilock queued", func() bool {
		return len(children(f.Raw(), path)) == 2 && len(watchesUnder(f, 0, f.Path("closeacq/sm"))) > 0
	})
	time.Sleep(200 * time.Millisecond) // the local waiter has no node to wait for: give it time to queue
	require.NoError(t, s.Close())
	for i := 0; i < 3; i++ {
		err, ok := within(errs, 2*time.Second)
		if !ok {
			t.Fatalf("an Acquire still waits 2 s after Close (%d returned)", i)
		}
		if !errors.Is(err, conn.ErrClosed) {
			t.Errorf("Acquire after Close: %v, want an error matching conn.ErrClosed", err)
		}
	}
	if !closesWithin(l1.Lost(), time.Second) {
		t.Errorf("the holder's Lost still open after Close")
	}
	if n := countNodes(f.Raw(), f.Path("closeacq")); n != 1 { // the other session's semaphore mutex
		t.Errorf("%d lock nodes under the paths, want 1 (the other session's): %v", n, nodes{f.Raw(), path})
	}
	// Two mutex grants held at Close: goroutine 1's, and the multilock's
	// mutex on /closeacq/a (taken first: path order) while it waits for
	// the semaphore mutex.
	rec.expect(t, 2, metrics.LockLost, "mutex", metrics.CauseClosed, "the holders' losses, closed")
	rec.expect(t, 0, metrics.LockHold, "", "", "holds")
	rec.expect(t, 0, metrics.LockHandoff, "", "", "handoffs")
	rec.expect(t, 2, metrics.LockWait, "mutex", metrics.OutcomeGranted, "waits granted")
	if n := rec.count(metrics.LockWait, "", "") - rec.count(metrics.LockWait, "", metrics.OutcomeGranted); n < 3 {
		t.Errorf("waits not granted reported: %d, want at least 3 (two mutex waits, the multilock's semaphore mutex): %s", n, rec.dump())
	}
}

// TestEveryCallKeepsItsDeadlineWhileBlackholed: "ctx bounds the wait";
// Acquire and TryAcquire "return at most 100 ms after ctx ends"; releases
// say ErrReleasePending rather than wait. With the connection blackholed
// (session alive), every call below at once, each with a 300 ms deadline,
// must return within 1 s: every recipe's release, Resign, Revoke, the
// snapshots, Session node operations, a first Fence, a GuardedWrite and a
// local waiter's Acquire.
func TestEveryCallKeepsItsDeadlineWhileBlackholed(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	px, s := f.ProxiedSession(conn.WithSessionTimeout(10 * time.Second))
	root := f.Path("bhdl")
	f.Register(root, nil)
	other := f.Session()
	rv, _ := mutex.New(other, root+"/revocable", lock.WithRevocable())
	rvl, err := rv.Acquire(ctx)
	require.NoError(t, err)

	start := make(chan struct{})
	type result struct {
		name string
		d    time.Duration
		err  error
	}
	results := make(chan result, 64)
	var calls []string
	// run starts name on a goroutine of its own: prep (before the
	// blackhole) returns the call made after it, on the same goroutine.
	run := func(name string, prep func() func(context.Context) error) {
		calls = append(calls, name)
		ready := make(chan func(context.Context) error)
		go func() {
			call := prep()
			ready <- call
			<-start
			d, err := timed(ctx, 300*time.Millisecond, call)
			results <- result{name, d, err}
		}()
		require.NotNil(t, <-ready, name)
	}
	acq := func(lk acquirer) *conn.Lease {
		l, err := lk.Acquire(ctx)
		require.NoError(t, err)
		return l
	}
	hm, _ := mutex.New(s, root+"/handoff", lock.WithLocalHandoff(3, 0))
	run("mutex.Release (local handoff, a local waiter behind)", func() func(context.Context) error {
		acq(hm)
		return hm.Release
	})
	run("mutex.Acquire (local waiter)", func() func(context.Context) error {
		return acquireErr(hm)
	})
	run("rwlock read Release", func() func(context.Context) error {
		rw := newRW(t, s, root+"/rw")
		acq(rw.ReadLock())
		return rw.ReadLock().Release
	})
	run("multilock.Release", func() func(context.Context) error {
		a, _ := mutex.New(s, root+"/ml-a", lock.WithLocalHandoff(2, 0))
		b := newRW(t, s, root+"/ml-b")
		ml, err := multilock.New(a, b.ReadLock())
		require.NoError(t, err)
		_, err = ml.Acquire(ctx)
		require.NoError(t, err)
		return ml.Release
	})
	run("semaphore.ReturnLease", func() func(context.Context) error {
		sem, _ := semaphoremutex.NewSemaphore(s, root+"/sem", 2)
		l := acq(sem)
		return func(ctx context.Context) error { return sem.ReturnLease(ctx, l) }
	})
	run("semaphoremutex.Release", func() func(context.Context) error {
		sm, _ := semaphoremutex.New(s, root+"/sm", lock.WithLocalHandoff(2, 0))
		acq(sm)
		return sm.Release
	})
	e := electionOf(t, s, root+"/l", "me")
	run("leader.Resign", func() func(context.Context) error {
		_, err := e.Campaign(ctx)
		require.NoError(t, err)
		return e.Resign
	})
	run("leader.Leader", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := e.Leader(ctx); return err }
	})
	run("leader.Participants", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := e.Participants(ctx); return err }
	})
	run("lock.Revoke", func() func(context.Context) error {
		return func(ctx context.Context) error { return lock.Revoke(ctx, s, rvl.Path()) }
	})
	run("mutex.TryAcquire", func() func(context.Context) error {
		m, _ := mutex.New(s, root+"/revocable")
		return tryErr(m)
	})
	run("first Fence", func() func(context.Context) error {
		m, _ := mutex.New(s, root+"/fence")
		l := acq(m)
		return func(ctx context.Context) error { _, err := l.Fence(ctx); return err }
	})
	run("GuardedWrite", func() func(context.Context) error {
		m, _ := mutex.New(s, root+"/gw")
		l := acq(m)
		return func(ctx context.Context) error { return guardedSet(ctx, l, root, []byte("x"), -1) }
	})
	run("Session.Get", func() func(context.Context) error {
		return func(ctx context.Context) error { _, _, err := s.Get(ctx, root); return err }
	})
	run("Session.Set", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := s.Set(ctx, root, []byte("y"), -1); return err }
	})
	run("Session.Create", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := s.Create(ctx, root+"/c", nil, 0, zkWorld); return err }
	})
	run("Session.Delete", func() func(context.Context) error {
		return func(ctx context.Context) error { return s.Delete(ctx, root+"/nothing", -1) }
	})
	run("Session.Children", func() func(context.Context) error {
		return func(ctx context.Context) error { _, _, err := s.Children(ctx, root); return err }
	})

	px.Blackhole()
	close(start)
	for range calls {
		r, ok := within(results, 5*time.Second)
		if !ok {
			t.Fatalf("a call still running 5 s after its 300 ms deadline")
		}
		t.Logf("%s: %v: %v", r.name, r.d.Round(time.Millisecond), r.err)
		if r.d > time.Second {
			t.Errorf("%s returned %v after its start, 300 ms deadline: %v", r.name, r.d.Round(time.Millisecond), r.err)
		}
	}
	px.Heal()
}

// TestSuspendedAsLostLeaseStaysLostAfterReconnect: WithSuspendedAsLost
// tells a holder its lock is lost on Suspended; GuardedWrite and Fence
// then fail with ErrLeaseLost; WithLocalHandoff hands on no lost node. A
// local-handoff holder with a local waiter is suspended, then reconnects
// on the same session (its node survives): GuardedWrite and a first Fence
// still say ErrLeaseLost, and after Release the local waiter is not
// granted on the lost grant's node.
func TestSuspendedAsLostLeaseStaysLostAfterReconnect(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	px, s := f.ProxiedSession(conn.WithSuspendedAsLost(), conn.WithSessionTimeout(6*time.Second))
	path := f.Path("susprec/m")
	m, _ := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	l1, err := m.Acquire(ctx)
	require.NoError(t, err)
	local := hold(ctx, m)
	time.Sleep(100 * time.Millisecond) // the local waiter queues in the process
	suspend(t, px, s)
	recv(t, l1.Lost(), 3*time.Second, "Lost did not close on Suspended")
	sid := l1.Epoch().SessionID()
	px.Heal()
	waitFor(t, 10*time.Second, "reconnected", func() bool { return s.State() == conn.Reconnected })
	require.Equal(t, sid, epochOf(t, s).SessionID(), "same session")
	require.True(t, exists(f.Raw(), l1.Path()), "the lost grant's node survives with the session")
	_, err = l1.GuardedWrite(ctx)
	if !errors.Is(err, conn.ErrLeaseLost) {
		t.Errorf("GuardedWrite of the lost lease after the reconnect: %v, want ErrLeaseLost", err)
	}
	if fe, err := l1.Fence(ctx); !errors.Is(err, conn.ErrLeaseLost) {
		t.Errorf("Fence of the lost lease after the reconnect: %v, %v, want ErrLeaseLost", fe, err)
	}
	require.NoError(t, m.Release(ctx), "release after loss")
	if l2, ok := local.granted(t, 3*time.Second, "local waiter"); ok {
		if l2.Path() == l1.Path() {
			t.Errorf("the local waiter was handed the lost grant's node %s", l1.Path())
		}
		require.NoError(t, local.release())
	}
	waitFor(t, 5*time.Second, "the lost grant's node gone", func() bool { return !exists(f.Raw(), l1.Path()) })
}

// TestRepeatedForeignAndNilOptionsRefused: lock.Option, "A recipe refuses
// an option that does not apply to it, a nil one and a repeated one, with
// an error matching conn.ErrInvalidArgument that names the option and the
// recipe", across every New that takes options: the same option twice
// (equal or different values, adjacent or not), one of another recipe, a
// nil one. Each must be refused naming the recipe and the option (nil: the
// word "nil"), and the valid combinations must still be taken.
func TestRepeatedForeignAndNilOptionsRefused(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	p := f.Path("opts")
	rev, ho, host, rq := lock.WithRevocable(), lock.WithLocalHandoff(2, 0), rwlock.WithHost("h"), leader.WithRequeue()
	news := map[string]func(opts ...lock.Option) error{
		"mutex":          func(o ...lock.Option) error { _, err := mutex.New(s, p, o...); return err },
		"semaphoremutex": func(o ...lock.Option) error { _, err := semaphoremutex.New(s, p, o...); return err },
		"semaphore":      func(o ...lock.Option) error { _, err := semaphoremutex.NewSemaphore(s, p, 2, o...); return err },
		"rwlock":         func(o ...lock.Option) error { _, err := rwlock.New(s, p, o...); return err },
		"leader":         func(o ...lock.Option) error { _, err := leader.New(s, p, "id", o...); return err },
	}
	names := map[string]lock.Option{"WithRevocable": rev, "WithLocalHandoff": ho, "WithHost": host, "WithRequeue": rq}
	takes := map[string][]string{"mutex": {"WithRevocable", "WithLocalHandoff"}, "semaphoremutex": {"WithLocalHandoff", "WithRevocable"},
		"semaphore": {"WithRevocable"}, "rwlock": {"WithHost", "WithRevocable"}, "leader": {"WithRequeue"}}
	for recipe, mk := range news {
		var valid []lock.Option
		for _, n := range takes[recipe] {
			valid = append(valid, names[n])
		}
		require.NoError(t, mk(valid...), "%s: valid options %v", recipe, takes[recipe])
		check := func(what, opt string, opts ...lock.Option) {
			err := mk(opts...)
			if !errors.Is(err, conn.ErrInvalidArgument) {
				t.Errorf("%s with %s: %v, want ErrInvalidArgument", recipe, what, err)
				return
			}
			if msg := err.Error(); !strings.Contains(msg, opt) || !strings.Contains(msg, strings.TrimSuffix(recipe, "mutex")) {
				t.Errorf("%s with %s: %q does not name the option %s and the recipe", recipe, what, msg, opt)
			}
		}
		for name, o := range names {
			if slices.Contains(takes[recipe], name) {
				check(name+" twice", name, append(append([]lock.Option{o}, valid...), o)...)
			} else {
				check("foreign "+name, name, o)
			}
		}
		check("a nil option", "nil", append([]lock.Option{nil}, valid...)...)
	}
	// Two of one kind with different values.
	_, err := rwlock.New(s, p, rwlock.WithHost("a"), rwlock.WithHost("b"))
	require.ErrorIs(t, err, conn.ErrInvalidArgument, "WithHost twice, different hosts")
	_, err = mutex.New(s, p, lock.WithLocalHandoff(1, 0), lock.WithLocalHandoff(5, time.Second))
	require.ErrorIs(t, err, conn.ErrInvalidArgument, "WithLocalHandoff twice, different bounds")
	require.False(t, exists(f.Raw(), p), "a New created %s", p)
}

// TestCloseWhileWaitingForOwnHandle: a second Acquire, without
// deadline, of a handle-owned lock that its handle holds ("a second
// Acquire waits"), when the Session is closed. conn: "ErrClosed is
// returned by every call made after Close"; the suite's own
// TestCloseDuringAcquireAcrossHandoffAndSharedListing holds every wait
// in flight (a local waiter behind a held node included) to end within
// 2 s of Close with ErrClosed: the semaphore mutex's wait for its own
// handle's hold too, and exclusive.Lock's.
func TestCloseWhileWaitingForOwnHandle(t *testing.T) {
	for _, name := range []string{"semaphoremutex", "semaphoremutex-handoff", "semaphoremutex-handoff-other-handle", "exclusive"} {
		t.Run(name, func(t *testing.T) {
			f, ctx := setUp(t, 30*time.Second)
			s := f.Session()
			path := f.Path("cw")
			recipe, other := strings.CutSuffix(name, "-other-handle")
			lk := newLocker(t, recipe, s, path, 0)
			second := lk
			if other {
				second = newLocker(t, recipe, s, path, 0)
			}
			_, err := lk.Acquire(ctx)
			require.NoError(t, err)
			errc := make(chan error, 1)
			go func() { _, err := second.Acquire(context.WithoutCancel(ctx)); errc <- err }()
			time.Sleep(200 * time.Millisecond) // shapes: the second Acquire waits
			require.NoError(t, s.Close())
			err, ok := within(errc, 2*time.Second)
			t.Logf("waiting acquire after Close: %v (returned: %v)", err, ok)
			if !ok {
				t.Errorf("a waiting Acquire (no deadline) still waits 2 s after Close")
				_ = lk.Release(ctx)
				err, ok = within(errc, 2*time.Second)
				t.Logf("after the holder's Release: %v (returned: %v)", err, ok)
			} else if !errors.Is(err, conn.ErrClosed) {
				t.Errorf("waiting acquire: %v, want ErrClosed", err)
			}
		})
	}
}

var probe2Recipes = []string{"mutex", "mutex-handoff", "semaphoremutex", "semaphoremutex-handoff", "rwlock-write", "rwlock-read", "semaphore-2", "multilock", "exclusive", "leader"}

// TestReleaseAnswerLost: every recipe's Release whose delete answer
// is lost (CutAfterNextWrite) returns nil or ErrReleasePending, and nothing
// is left on the server; the session keeps no watch; another session gets
// the lock.
func TestReleaseAnswerLost(t *testing.T) {
	f := newFixture(t)
	f.Each(t, probe2Recipes, func(t *testing.T, f *fixture, name string) {
		ctx := ctxT(t, 30*time.Second)
		mrec := &metricsRec{}
		px, s := f.ProxiedSession(conn.WithLastHeardTimer(), conn.WithMetrics(mrec.Hooks()))
		root := f.Path("rel-" + name)
		path := root + "/lk"
		lk := newLocker(t, name, s, path, 1)
		l, err := lk.Acquire(ctx)
		require.NoError(t, err)
		_ = l.Lost() // arm its watch
		px.CutAfterNextWrite()
		d, err := timed(ctx, 8*time.Second, lk.Release)
		t.Logf("release with lost answer: %v after %v; lease err %v", err, d, l.Err())
		if err != nil && !errors.Is(err, lock.ErrReleasePending) {
			t.Errorf("release: %v, want nil or ErrReleasePending", err)
		}
		if !eventually(10*time.Second, func() bool { return countNodes(f.Raw(), root) == 0 && countNodes(f.Raw(), root+"/lk-other") == 0 }) {
			t.Errorf("nodes left: %v", children(f.Raw(), path))
		}
		select {
		case <-l.Lost():
		default:
			t.Errorf("lease Lost not closed after release")
		}
		// another session gets it at once
		lk2 := newLocker(t, name, f.Session(), path, 2)
		_, err = timed(ctx, 5*time.Second, func(c context.Context) error { _, err := lk2.Acquire(c); return err })
		if err != nil {
			t.Errorf("other session acquire: %v", err)
		}
		noWatchesLeft(t, f, s, 5*time.Second, name)
		mrec.gaugeDrains(t, 5*time.Second)
		ends := mrec.count("hold", "", "") + mrec.count("lost", "", "")
		want := 1
		if name == "multilock" {
			want = 2
		}
		if !eventually(3*time.Second, func() bool { mrec.mu.Lock(); defer mrec.mu.Unlock(); return len(mrec.states) > 1 }) {
			t.Errorf("no cut seen: states %v", mrec.states)
		}
		t.Logf("states %v, events %s", mrec.states, mrec.dump())
		if ends != want {
			t.Errorf("grant ended %d times in metrics: %s", ends, mrec.dump())
		}
		// Release again: not held
		if err := lk.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("second release: %v, want ErrNotHeld", err)
		}
	})
}

// TestMultiLockSecondCreateLostSearchCut: a multilock whose second
// lock's create answer is lost, and the search for it cut too, on a
// one-attempt session: Acquire fails with ErrCreatePending (safety.md's
// fault table), the first lock is rolled back, and nothing is left once
// the connection is back: another session takes both locks.
func TestMultiLockSecondCreateLostSearchCut(t *testing.T) {
	for _, second := range []string{"semaphoremutex", "rwlock-write", "mutex"} {
		t.Run(second, func(t *testing.T) {
			f, ctx := setUp(t, 60*time.Second)
			px, s := f.ProxiedSession(oneAttempt(200*time.Millisecond), conn.WithSessionTimeout(8*time.Second))
			root := f.Path("mlc")
			a := newLocker(t, "mutex", s, root+"/a", 0)
			b := newLocker(t, second, s, root+"/b", 0)
			ml, err := multilock.New(a.(lock.Locker), b.(lock.Locker))
			require.NoError(t, err)
			_, err = ml.Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, ml.Release(ctx))
			require.True(t, eventually(5*time.Second, func() bool { return countNodes(f.Raw(), root) == 0 }))

			px.BlackholeAfterNextOpOn(root + "/b")
			ech := make(chan error, 1)
			go func() {
				_, err := timed(ctx, 6*time.Second, func(c context.Context) error { _, err := ml.Acquire(c); return err })
				ech <- err
			}()
			waitFor(t, 10*time.Second, "b's node on the server", func() bool { return countNodes(f.Raw(), root+"/b") >= 1 })
			t.Logf("nodes: %v", ephemeralsUnder(f.Raw(), root))
			px.BlackholeAfterNextOpOn(root + "/b")
			px.Heal()
			var err2 error
			select {
			case err2 = <-ech:
			case <-time.After(3 * time.Second):
				px.Heal()
				px.BlackholeAfterWrites(0)
				err2 = <-ech
			}
			px.Heal()
			px.BlackholeAfterWrites(0)
			t.Logf("acquire: %v", err2)
			if err2 == nil {
				t.Logf("granted after all")
				require.NoError(t, ml.Release(ctx))
			} else if !errors.Is(err2, lock.ErrCreatePending) {
				t.Errorf("acquire: %v, want ErrCreatePending", err2)
			}
			if !eventually(10*time.Second, func() bool { return countNodes(f.Raw(), root) == 0 }) {
				t.Errorf("nodes left: %v", ephemeralsUnder(f.Raw(), root))
			}
			other := f.Session()
			ml2, err := multilock.New(newLocker(t, "mutex", other, root+"/a", 1).(lock.Locker), newLocker(t, second, other, root+"/b", 1).(lock.Locker))
			require.NoError(t, err)
			d, err := timed(ctx, 5*time.Second, func(c context.Context) error { _, err := ml2.Acquire(c); return err })
			if err != nil {
				t.Errorf("other session: %v after %v", err, d)
			}
			noWatchesLeft(t, f, s, 5*time.Second, "s")
		})
	}
}

// ephemeralsUnder lists the ephemeral nodes under path with their owners.
func ephemeralsUnder(zc *zk.Conn, path string) []string {
	var out []string
	for _, ch := range children(zc, path) {
		p := path + "/" + ch
		if _, st, err := zc.Get(p); err == nil && st.EphemeralOwner != 0 {
			out = append(out, fmt.Sprintf("%s@0x%x(czxid 0x%x)", p, st.EphemeralOwner, st.Czxid))
		}
		out = append(out, ephemeralsUnder(zc, p)...)
	}
	return out
}
