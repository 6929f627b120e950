package attack_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_CreatePendingThenReacquireKeepsNewNode checks lock's
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
func TestProbe2_CreatePendingThenReacquireKeepsNewNode(t *testing.T) {
	c := zktest.New(t)
	path := c.Root() + "/r2-pending/lock"
	ctx := ctxT(t, 29*time.Second)
	bys := raw(t, c)
	px := zktest.NewProxy(t, c.Servers())
	sA := session(t, px.Addrs(), conn.WithSessionTimeout(8*time.Second),
		conn.WithRetryPolicy(conn.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxAttempts: 1}))
	sB := session(t, c.Servers())
	sC := session(t, c.Servers())
	mA, _ := mutex.New(sA, path)
	mB, _ := mutex.New(sB, path)
	mC, _ := mutex.New(sC, path)
	if _, err := mB.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	px.BlackholeAfterNextWrite()
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
	px.Heal()
	px.Blackhole()
	var err error
	select {
	case err = <-ech:
	case <-time.After(2500 * time.Millisecond):
		px.Heal()
		err = <-ech
	}
	px.Heal()
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
	if err := mB.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var r res
	select {
	case r = <-ach:
	case <-time.After(15 * time.Second):
		t.Fatalf("A's second acquire never granted; nodes %v, C in: %v", children(bys, path), cIn.Load())
	}
	if r.err != nil {
		t.Fatalf("A's second acquire: %v", r.err)
	}
	t.Logf("A granted on %s", r.l.Path())
	// Let the background search run its course while A holds.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.l.Lost():
			t.Fatalf("A's lease lost while held (its node deleted?): nodes %v", children(bys, path))
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
	if err := <-rel; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cch:
		if err != nil {
			t.Fatalf("C: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("C never granted after A's release: the lost node stayed? nodes %v", children(bys, path))
	}
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
}
