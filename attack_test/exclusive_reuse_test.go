package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// exclusiveReplaced returns A's lease and B's, after a bystander deleted
// A's node and B created the same path: A has not called Lost, Fence or
// GuardedWrite before.
func exclusiveReplaced(t *testing.T, c *zktest.Cluster, ctx context.Context, name string) (la, lb *conn.Lease) {
	sa := session(t, c.Servers())
	sb := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/excl-reuse-" + name
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
	waitFor(t, 5*time.Second, "B's watch", func() bool { return watched(c, 0, la.Path()) })
	if err := zc.Delete(la.Path(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case lb = <-bGot:
	case <-time.After(5 * time.Second):
		t.Fatal("B did not take the lock")
	}
	if lb == nil {
		t.FailNow()
	}
	t.Cleanup(func() { _ = xb.Release(context.Background()) })
	return la, lb
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
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	la, lb := exclusiveReplaced(t, c, ctx, "token")
	fb, err := lb.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fa, errA := la.Fence(ctx)
	if errors.Is(errA, conn.ErrLeaseLost) {
		return
	}
	if errA != nil {
		t.Fatal(errA)
	}
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
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	la, lb := exclusiveReplaced(t, c, ctx, "lost")
	select {
	case <-la.Lost():
	case <-time.After(3 * time.Second):
		t.Fatalf("stale A's Lost open 3 s after it was first called, while B holds %s (A's Err: %v, B's Err: %v)", lb.Path(), la.Err(), lb.Err())
	}
}
