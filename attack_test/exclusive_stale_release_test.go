package attack_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

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
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	sa := session(t, c.Servers())
	sb := session(t, c.Servers())
	sc := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/excl-stale"
	xa, _ := exclusive.New(sa, path)
	xb, _ := exclusive.New(sb, path)
	xc, _ := exclusive.New(sc, path)
	la, err := xa.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bGot := make(chan *conn.Lease, 1)
	go func() {
		l, err := xb.Acquire(ctx)
		if err != nil {
			t.Errorf("B: %v", err)
			close(bGot)
			return
		}
		bGot <- l
	}()
	waitFor(t, 5*time.Second, "B's watch on the lock node", func() bool { return watched(c, 0, la.Path()) })
	if err := zc.Delete(la.Path(), -1); err != nil {
		t.Fatal(err)
	}
	var lb *conn.Lease
	select {
	case lb = <-bGot:
	case <-time.After(5 * time.Second):
		t.Fatal("B did not take the lock after the bystander's delete")
	}
	if lb == nil {
		t.FailNow()
	}
	defer xb.Release(context.WithoutCancel(ctx))
	_, bst, err := zc.Get(lb.Path())
	if err != nil {
		t.Fatal(err)
	}
	cGot := make(chan error, 1)
	go func() {
		_, err := xc.Acquire(ctx)
		cGot <- err
		if err == nil {
			_ = xc.Release(context.WithoutCancel(ctx))
		}
	}()
	waitFor(t, 5*time.Second, "C's watch on B's node", func() bool { return watched(c, 0, lb.Path()) })

	relErr := xa.Release(ctx)
	t.Logf("A's stale Release: %v", relErr)
	select {
	case err := <-cGot:
		t.Fatalf("C entered (err=%v) while B holds: A's stale Release deleted B's node (czxid %d)", err, bst.Czxid)
	case <-time.After(1500 * time.Millisecond):
	}
	_, st, err := zc.Get(lb.Path())
	if err != nil || st.Czxid != bst.Czxid {
		t.Fatalf("B's node after A's stale Release: %+v %v", st, err)
	}
	if err := xb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-cGot; err != nil {
		t.Fatal(err)
	}
}

// TestProbe_ExclusiveBackgroundDeleteSparesNewHolder checks exclusive/doc.go:
// "when the delete's fate is unknown it keeps deleting in the background
// until the node is gone or the session epoch ends, and says so
// (ErrReleasePending)" against "Never two holders", without any bystander:
// A's delete is applied but its answer is lost
// (Proxy.BlackholeAfterWrites(2): Release reads the node, then deletes
// it), B takes the lock (the same path, version 0 again), C waits; then
// A's connection comes back with the same session. A's background deletion
// must not delete B's node.
func TestProbe_ExclusiveBackgroundDeleteSparesNewHolder(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	px := zktest.NewProxy(t, c.Servers())
	sa := session(t, px.Addrs())
	sb := session(t, c.Servers())
	sc := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/excl-bg"
	xa, _ := exclusive.New(sa, path)
	xb, _ := exclusive.New(sb, path)
	xc, _ := exclusive.New(sc, path)
	la, err := xa.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := sa.Epoch(ctx)
	sid := ep.SessionID()
	bGot := make(chan *conn.Lease, 1)
	go func() {
		l, err := xb.Acquire(ctx)
		if err != nil {
			t.Errorf("B: %v", err)
			close(bGot)
			return
		}
		bGot <- l
	}()
	waitFor(t, 5*time.Second, "B's watch on the lock node", func() bool { return watched(c, 0, la.Path()) })
	px.BlackholeAfterWrites(2) // Release reads the node, then deletes it
	rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	relErr := xa.Release(rctx)
	cancel()
	t.Logf("A's Release with its answer lost: %v", relErr)
	var lb *conn.Lease
	select {
	case lb = <-bGot:
	case <-time.After(5 * time.Second):
		px.Heal()
		t.Fatal("B did not take the lock after A's delete")
	}
	if lb == nil {
		t.FailNow()
	}
	defer xb.Release(context.WithoutCancel(ctx))
	_, bst, err := zc.Get(lb.Path())
	if err != nil {
		t.Fatal(err)
	}
	cGot := make(chan error, 1)
	go func() {
		_, err := xc.Acquire(ctx)
		cGot <- err
		if err == nil {
			_ = xc.Release(context.WithoutCancel(ctx))
		}
	}()
	waitFor(t, 5*time.Second, "C's watch on B's node", func() bool { return watched(c, 0, lb.Path()) })
	px.Heal()
	waitFor(t, 10*time.Second, "A's session back", func() bool {
		return sa.State() == conn.Reconnected || sa.State() == conn.Connected
	})
	if ep2, _ := sa.Epoch(ctx); ep2.SessionID() != sid {
		t.Logf("A's session was not kept (%x -> %x)", sid, ep2.SessionID())
	}
	select {
	case err := <-cGot:
		t.Fatalf("C entered (err=%v) while B holds: A's background deletion removed B's node (czxid %d)", err, bst.Czxid)
	case <-time.After(2 * time.Second):
	}
	if err := xb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-cGot; err != nil {
		t.Fatal(err)
	}
}

// TestProbe_ExclusivePendingReleaseSparesOwnReacquire checks exclusive/doc.go:
// "when the delete's fate is unknown it keeps deleting in the background
// until the node is gone" against "Never two holders", inside one session:
// A's release answer is lost (ErrReleasePending), and A's handle acquires
// again as soon as the connection is back, racing its own background
// deletion, which must not delete the new node (same path, same session,
// version 0 again). Five rounds; after each re-acquire, the node must stay
// A's and another session's TryAcquire must fail.
func TestProbe_ExclusivePendingReleaseSparesOwnReacquire(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	px := zktest.NewProxy(t, c.Servers())
	sa := session(t, px.Addrs())
	sc := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/excl-own"
	xa, _ := exclusive.New(sa, path)
	xc, _ := exclusive.New(sc, path)
	if _, err := xa.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 5; round++ {
		px.BlackholeAfterWrites(2) // Release reads the node, then deletes it
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := xa.Release(rctx)
		cancel()
		if !errors.Is(err, lock.ErrReleasePending) {
			t.Logf("round %d: release: %v", round, err)
		}
		again := make(chan *conn.Lease, 1)
		go func() {
			l, err := xa.Acquire(ctx)
			if err != nil {
				t.Errorf("round %d: re-acquire: %v", round, err)
			}
			again <- l
		}()
		px.Heal()
		var l *conn.Lease
		select {
		case l = <-again:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: A's re-acquire did not return", round)
		}
		if l == nil {
			t.FailNow()
		}
		// Give a wrong background delete time to land, then check.
		time.Sleep(300 * time.Millisecond)
		_, st, err := zc.Get(l.Path())
		if err != nil || st.EphemeralOwner != l.Epoch().SessionID() {
			t.Fatalf("round %d: A's new node after its background deletion: %+v %v", round, st, err)
		}
		if _, ok, err := xc.TryAcquire(ctx); ok || err != nil {
			t.Fatalf("round %d: another session's TryAcquire while A holds: ok=%v err=%v", round, ok, err)
		}
		if _, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: fmt.Sprintf("%s-res-%d", path, round), Acl: zk.WorldACL(zk.PermAll)}); err != nil {
			t.Fatalf("round %d: A's guarded write after re-acquiring: %v", round, err)
		}
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
	c := zktest.New(t)
	ctx := ctxT(t, 40*time.Second)
	px := zktest.NewProxy(t, c.Servers())
	sa := session(t, px.Addrs(), conn.WithSessionTimeout(20*time.Second))
	sb := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/excl-race"
	xa, _ := exclusive.New(sa, path)
	xb, _ := exclusive.New(sb, path)
	la, err := xa.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bGot := make(chan *conn.Lease, 1)
	go func() {
		l, err := xb.Acquire(ctx)
		if err != nil {
			t.Errorf("B: %v", err)
			close(bGot)
			return
		}
		bGot <- l
	}()
	waitFor(t, 5*time.Second, "B's watch on the lock node", func() bool { return watched(c, 0, la.Path()) })
	multis := sa.Stats().Requests[conn.OpMulti]
	px.SetLatency(d)
	released := make(chan error, 1)
	start := time.Now()
	go func() { released <- xa.Release(ctx) }()
	time.Sleep(2 * d) // A's read has been answered by the server; its delete is on its way
	if err := zc.Delete(la.Path(), -1); err != nil {
		t.Fatal(err)
	}
	var lb *conn.Lease
	select {
	case lb = <-bGot:
	case <-time.After(5 * time.Second):
		t.Fatal("B did not take the lock after the bystander's delete")
	}
	if lb == nil {
		t.FailNow()
	}
	_, bst, err := zc.Get(lb.Path())
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	relErr := <-released
	px.SetLatency(0)
	t.Logf("B held after %v; A's Release: %v after %v; A sent %d multi", took.Round(time.Millisecond), relErr,
		time.Since(start).Round(time.Millisecond), sa.Stats().Requests[conn.OpMulti]-multis)
	if relErr != nil {
		t.Errorf("A's Release: %v", relErr)
	}
	if sa.Stats().Requests[conn.OpMulti] == multis {
		t.Fatal("A's delete was never sent: the race was not set up (A's read already saw B's node)")
	}
	if took > 3*d {
		t.Fatalf("B held only %v after A's Release began: A's delete may have come first", took)
	}
	_, st, err := zc.Get(lb.Path())
	if err != nil || st.Czxid != bst.Czxid {
		t.Fatalf("B's node (czxid %d) after A's Release: %+v %v", bst.Czxid, st, err)
	}
	if err := xb.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
