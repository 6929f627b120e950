package attack_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// exclusiveScene: A (on a session the test chooses) holds the exclusive
// lock of a path and B, another session, waits with a watch on A's node.
type exclusiveScene struct {
	f      *fixture
	path   string
	xa, xb *exclusive.Lock
	la     *conn.Lease
	b      *holder
}

func newExclusiveScene(t *testing.T, f *fixture, ctx context.Context, path string, sa *conn.Session) *exclusiveScene {
	t.Helper()
	xa, _ := exclusive.New(sa, path)
	xb, _ := exclusive.New(f.Session(), path)
	la, err := xa.Acquire(ctx)
	require.NoError(t, err)
	b := hold(ctx, xb)
	waitFor(t, 5*time.Second, "B's watch on the lock node", func() bool { return watched(f, 0, la.Path()) })
	return &exclusiveScene{f: f, path: path, xa: xa, xb: xb, la: la, b: b}
}

// bTakesOver waits for B's grant once A's node went; B releases when the
// test ends. It returns B's lease and its node's czxid.
func (x *exclusiveScene) bTakesOver(t *testing.T, why string) (*conn.Lease, int64) {
	t.Helper()
	lb := x.b.wait(t, 5*time.Second, "B did not take the lock after "+why)
	t.Cleanup(func() { _ = x.xb.Release(context.Background()) })
	_, st, err := x.f.Raw().Get(lb.Path())
	require.NoError(t, err)
	return lb, st.Czxid
}

// cWaits has C, a third session, wait with a watch on B's node.
func (x *exclusiveScene) cWaits(t *testing.T, ctx context.Context, lb *conn.Lease) *holder {
	t.Helper()
	xc, _ := exclusive.New(x.f.Session(), x.path)
	c := hold(ctx, xc)
	waitFor(t, 5*time.Second, "C's watch on B's node", func() bool { return watched(x.f, 0, lb.Path()) })
	return c
}

// bNodeIntact fails the test unless B's node is the one created at czxid.
func (x *exclusiveScene) bNodeIntact(t *testing.T, lb *conn.Lease, czxid int64, after string) {
	t.Helper()
	_, st, err := x.f.Raw().Get(lb.Path())
	if err != nil || st.Czxid != czxid {
		t.Fatalf("B's node (czxid %d) after %s: %+v %v", czxid, after, st, err)
	}
}

// exclusiveReplaced returns A's lease and B's, after a bystander deleted
// A's node and B created the same path: A has not called Lost, Fence or
// GuardedWrite before.
func exclusiveReplaced(t *testing.T, f *fixture, ctx context.Context, name string) (la, lb *conn.Lease) {
	x := newExclusiveScene(t, f, ctx, f.Path("excl-reuse-")+name, f.Session())
	require.NoError(t, f.Raw().Delete(x.la.Path(), -1))
	lb, _ = x.bTakesOver(t, "the bystander's delete")
	return x.la, lb
}

// TestExclusiveFenceOfReplacedNodeIsNotTheNewHolders checks
// exclusive/doc.go: "Fence with Lease.Fence (the czxid of the node we
// created, pass 0), which the new holder's exceeds", with conn's
// Lease.Fence: "It fails with ErrLeaseLost once the lease is released or
// lost, or when the read finds the node gone or not ours". A's node is
// deleted by a bystander and B creates the same path before A first asks
// for its Fence. A's Fence must be below B's (or fail with ErrLeaseLost);
// if it equals B's, a fencing resource takes A's writes as B's.
func TestExclusiveFenceOfReplacedNodeIsNotTheNewHolders(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	la, lb := exclusiveReplaced(t, f, ctx, "token")
	fb := fenceOf(t, ctx, lb)
	fa, errA := la.Fence(ctx)
	if errors.Is(errA, conn.ErrLeaseLost) {
		return
	}
	require.NoError(t, errA)
	if fa.Compare(fb) >= 0 {
		t.Fatalf("stale A's Fence %v not below B's %v", fa, fb)
	}
}

// TestExclusiveLostArmedAfterReplacementCloses checks conn's
// Lease.Lost: "closed when the lease must be taken as lost: ... the node was
// deleted by someone else" and exclusive/doc.go: "A holder learns that its
// lock is no longer safe from the returned conn.Lease (Lost, Err)". A's node
// was deleted by a bystander and B holds the same path when A first calls
// Lost. A's Lost must close.
func TestExclusiveLostArmedAfterReplacementCloses(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	la, lb := exclusiveReplaced(t, f, ctx, "lost")
	if _, ok := within(la.Lost(), 3*time.Second); !ok {
		t.Fatalf("stale A's Lost open 3 s after it was first called, while B holds %s (A's Err: %v, B's Err: %v)", lb.Path(), la.Err(), lb.Err())
	}
}

// TestExclusiveStaleReleaseSparesNewHolder checks exclusive/doc.go:
// "Never two holders" and "Release deletes our node only ... A node that
// is gone, or that someone else created after ours was deleted, is left
// alone, and Release returns nil", with lock's "Release after loss ... returns nil: ... someone deleted it;
// there is nothing left to release". Every holder's node has the same path
// <path>/lock, and a new node has version 0 again, so a version check alone
// cannot tell our node from the next holder's.
//
// A holds (never looks at Lost). A bystander deletes A's node; B, waiting,
// creates it and holds. C waits. A, unaware, releases: B's node must stay,
// and C must not enter while B holds.
func TestExclusiveStaleReleaseSparesNewHolder(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	x := newExclusiveScene(t, f, ctx, f.Path("excl-stale"), f.Session())
	require.NoError(t, f.Raw().Delete(x.la.Path(), -1))
	lb, czxid := x.bTakesOver(t, "the bystander's delete")
	c := x.cWaits(t, ctx, lb)

	relErr := x.xa.Release(ctx)
	t.Logf("A's stale Release: %v", relErr)
	c.notGranted(t, 1500*time.Millisecond, fmt.Sprintf("C entered while B holds: A's stale Release deleted B's node (czxid %d)", czxid))
	x.bNodeIntact(t, lb, czxid, "A's stale Release")
	require.NoError(t, x.xb.Release(ctx))
	c.wait(t, 20*time.Second, "C, after B released")
}

// TestExclusiveBackgroundDeleteSparesNewHolder checks exclusive/doc.go:
// "when the delete's fate is unknown it keeps deleting in the background
// until the node is gone or the session epoch ends, and says so
// (ErrReleasePending)" against "Never two holders", without any bystander:
// A's delete is applied but its answer is lost
// (Proxy.BlackholeAfterWrites(2): Release reads the node, then deletes
// it), B takes the lock (the same path, version 0 again), C waits; then
// A's connection comes back with the same session. A's background deletion
// must not delete B's node.
func TestExclusiveBackgroundDeleteSparesNewHolder(t *testing.T) {
	f, ctx := setUp(t, 25*time.Second)
	px, sa := f.ProxiedSession()
	x := newExclusiveScene(t, f, ctx, f.Path("excl-bg"), sa)
	sid := x.la.Epoch().SessionID()
	px.BlackholeAfterWrites(2) // Release reads the node, then deletes it
	_, relErr := timed(ctx, 500*time.Millisecond, x.xa.Release)
	t.Logf("A's Release with its answer lost: %v", relErr)
	lb, czxid := x.bTakesOver(t, "A's delete")
	c := x.cWaits(t, ctx, lb)
	px.Heal()
	waitFor(t, 10*time.Second, "A's session back", func() bool {
		return sa.State() == conn.Reconnected || sa.State() == conn.Connected
	})
	if ep2, _ := connlink.Of(sa).Epoch(ctx); ep2.SessionID() != sid {
		t.Logf("A's session was not kept (%x -> %x)", sid, ep2.SessionID())
	}
	c.notGranted(t, 2*time.Second, fmt.Sprintf("C entered while B holds: A's background deletion removed B's node (czxid %d)", czxid))
	require.NoError(t, x.xb.Release(ctx))
	c.wait(t, 20*time.Second, "C, after B released")
}

// TestExclusivePendingReleaseSparesOwnReacquire checks exclusive/doc.go:
// "when the delete's fate is unknown it keeps deleting in the background
// until the node is gone" against "Never two holders", inside one session:
// A's release answer is lost (ErrReleasePending), and A's handle acquires
// again as soon as the connection is back, racing its own background
// deletion, which must not delete the new node (same path, same session,
// version 0 again). Five passes; after each re-acquire, the node must stay
// A's and another session's TryAcquire must fail.
func TestExclusivePendingReleaseSparesOwnReacquire(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	px, sa := f.ProxiedSession()
	path := f.Path("excl-own")
	xa, _ := exclusive.New(sa, path)
	xc, _ := exclusive.New(f.Session(), path)
	_, err := xa.Acquire(ctx)
	require.NoError(t, err)
	for pass := 0; pass < 5; pass++ {
		px.BlackholeAfterWrites(2) // Release reads the node, then deletes it
		if _, err := timed(ctx, 300*time.Millisecond, xa.Release); !errors.Is(err, lock.ErrReleasePending) {
			t.Logf("pass %d: release: %v", pass, err)
		}
		again := make(chan *conn.Lease, 1)
		go func() {
			l, err := xa.Acquire(ctx)
			if err != nil {
				t.Errorf("pass %d: re-acquire: %v", pass, err)
			}
			again <- l
		}()
		px.Heal()
		l := recv(t, again, 10*time.Second, "pass %d: A's re-acquire did not return", pass)
		if l == nil {
			t.FailNow()
		}
		// Give a wrong background delete time to land, then check.
		time.Sleep(300 * time.Millisecond)
		_, st, err := f.Raw().Get(l.Path())
		if err != nil || st.EphemeralOwner != l.Epoch().SessionID() {
			t.Fatalf("pass %d: A's new node after its background deletion: %+v %v", pass, st, err)
		}
		if _, ok, err := xc.TryAcquire(ctx); ok || err != nil {
			t.Fatalf("pass %d: another session's TryAcquire while A holds: ok=%v err=%v", pass, ok, err)
		}
		require.NoError(t, guardedCreate(ctx, l, fmt.Sprintf("%s-res-%d", path, pass)), "pass %d: A's guarded write after re-acquiring", pass)
	}
}

// TestExclusiveReleaseRacingReplacementSparesNewHolder checks exclusive/doc.go:
// "Release deletes our node only: it reads the node, and deletes it if it
// is still ours ..., in one transaction behind a set-data of it, which the
// server refuses on another session's node", in the one round trip
// between Release's read and its delete: A's connection is slowed (every
// chunk delayed by d, each way), so that A's read reaches the server at
// about +d and its delete at about +3d; at +2d a bystander deletes A's node
// and B, waiting, creates it again (version 0, as A's was). A's delete
// must be refused on B's node: B's node stays, and A's Release returns nil
// (its node is gone).
func TestExclusiveReleaseRacingReplacementSparesNewHolder(t *testing.T) {
	const d = time.Second
	f, ctx := setUp(t, 40*time.Second)
	px, sa := f.ProxiedSession(conn.WithSessionTimeout(20 * time.Second))
	x := newExclusiveScene(t, f, ctx, f.Path("excl-race"), sa)
	multis := connlink.Of(sa).Stats().Requests[metrics.OpMulti]
	px.SetLatency(d)
	released := make(chan error, 1)
	start := time.Now()
	go func() { released <- x.xa.Release(ctx) }()
	time.Sleep(2 * d) // A's read has been answered by the server; its delete is on its way
	require.NoError(t, f.Raw().Delete(x.la.Path(), -1))
	lb, czxid := x.bTakesOver(t, "the bystander's delete")
	took := time.Since(start)
	relErr := <-released
	px.SetLatency(0)
	t.Logf("B held after %v; A's Release: %v after %v; A sent %d multi", took.Round(time.Millisecond), relErr,
		time.Since(start).Round(time.Millisecond), connlink.Of(sa).Stats().Requests[metrics.OpMulti]-multis)
	if relErr != nil {
		t.Errorf("A's Release: %v", relErr)
	}
	if connlink.Of(sa).Stats().Requests[metrics.OpMulti] == multis {
		t.Fatal("A's delete was never sent: the race was not set up (A's read already saw B's node)")
	}
	if took > 3*d {
		t.Fatalf("B held only %v after A's Release began: A's delete may have come first", took)
	}
	x.bNodeIntact(t, lb, czxid, "A's Release")
	require.NoError(t, x.xb.Release(ctx))
}

// TestExclusiveCreatePendingThenRace checks exclusive's "Never two
// holders" and "An acquire that fails before it could tell whether the node
// is ours ... its error matches lock.ErrCreatePending" with "the node is
// checked against our session id and the unique id in its data, and deleted
// if it is ours, in the background": A's create of the lock node is
// answered into a blackhole, the search for it too (a retry policy of one
// attempt); once A's Acquire fails with ErrCreatePending and the proxy
// heals, A (same handle) and B race for the lock, each holding 300 ms,
// three passes each. A ledger and a guarded write per hold check that no two
// hold at once (the background delete of A's lost node must not delete the
// node of A's own new acquire, nor B's), and nothing is left at the end.
func TestExclusiveCreatePendingThenRace(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	path := f.Path("excl")
	reg := f.Path("excl-reg")
	f.Register(reg, nil)
	px, sA := f.ProxiedSession(conn.WithSessionTimeout(8*time.Second), oneAttempt(20*time.Millisecond))
	lA, _ := exclusive.New(sA, path)
	lB, _ := exclusive.New(f.Session(), path)
	// Parents first, so that the next write is the lock node's create.
	_, err := lA.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lA.Release(ctx))
	err = createLostInBlackhole(t, ctx, px, f.Raw(), path, 1, acquireErr(lA), t.Logf)
	if !errors.Is(err, lock.ErrCreatePending) {
		t.Fatalf("want lock.ErrCreatePending, got %v", err)
	}
	var inside int32
	var wg sync.WaitGroup
	for _, who := range []struct {
		name string
		l    *exclusive.Lock
	}{{"A", lA}, {"B", lB}} {
		wg.Add(1)
		go func(name string, l *exclusive.Lock) {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				lease, err := l.Acquire(ctx)
				if err != nil {
					t.Errorf("%s: acquire: %v", name, err)
					return
				}
				lost := lease.Lost()
				if n := atomic.AddInt32(&inside, 1); n != 1 {
					t.Errorf("%s: %d holders", name, n)
				}
				for j := 0; j < 3; j++ {
					if err := guardedSet(ctx, lease, reg, []byte(name), -1); err != nil {
						t.Errorf("%s: guarded write while holding: %v", name, err)
					}
					if _, ok := within(lost, 100*time.Millisecond); ok {
						t.Errorf("%s: lease lost while holding (node deleted by the background delete?)", name)
					}
				}
				atomic.AddInt32(&inside, -1)
				if err := l.Release(ctx); err != nil {
					t.Errorf("%s: release: %v", name, err)
				}
			}
		}(who.name, who.l)
	}
	wg.Wait()
	waitFor(t, 10*time.Second, "no lock node left", func() bool { return len(children(f.Raw(), path)) == 0 })
}

// TestExclusiveNodeWrittenByItsOwnSessionIsReleased: exclusive: "Never two
// holders"; Release deletes "the lock node if it is still ours". The
// holder's own session writes into its node (named plain "lock") by
// Session.Set or another lease's GuardedWrite while another session waits:
// the waiter stays out until the release and is granted after it (Release
// knows its node by czxid, not only by the id in its data).
func TestExclusiveNodeWrittenByItsOwnSessionIsReleased(t *testing.T) {
	newFixture(t).Each(t, []string{"set", "guardedwrite"}, func(t *testing.T, f *fixture, how string) {
		ctx := ctxT(t, 30*time.Second)
		s := f.Session()
		path := f.Path("xown-" + how + "/x")
		x := newLocker(t, "exclusive", s, path, 0)
		xl, err := x.Acquire(ctx)
		require.NoError(t, err)
		m := newLocker(t, "mutex", s, f.Path("xown-"+how+"/m"), 0)
		ml, err := m.Acquire(ctx)
		require.NoError(t, err)
		w := hold(ctx, newLocker(t, "exclusive", f.Session(), path, 1))
		waitFor(t, 10*time.Second, "the waiter watches the lock node", func() bool { return watched(f, 0, xl.Path()) })
		if how == "set" {
			_, err = s.Set(ctx, xl.Path(), []byte("mine"), -1)
			t.Logf("Session.Set on %s: %v", xl.Path(), err)
		} else {
			err = guardedSet(ctx, ml, xl.Path(), []byte("again"), -1)
			t.Logf("GuardedWrite into %s: %v", xl.Path(), err)
		}
		w.notGranted(t, 2*time.Second, "the exclusive waiter was granted while the holder holds")
		_, err = xl.GuardedWrite(ctx)
		require.NoError(t, err, "the holder still holds")
		require.NoError(t, x.Release(ctx))
		if _, ok := w.granted(t, 5*time.Second, "waiter"); !ok {
			_, st, err := f.Raw().Get(xl.Path())
			var owner int64
			if st != nil {
				owner = st.EphemeralOwner
			}
			t.Errorf("the waiter is not granted 5 s after the holder's Release returned nil: the node %s (err %v, owner %x, holder's session %x) stays while the session lives",
				xl.Path(), err, owner, xl.Epoch().SessionID())
		}
		require.NoError(t, m.Release(ctx))
	})
}
