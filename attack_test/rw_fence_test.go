package attack_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestRWLockDowngradeFenceBeforeNextWriter checks conn.Fence (go
// doc ./conn Fence): "Fence is a fencing token that grows strictly with
// every grant of a lock ... A later grant has a greater Zxid, or the same
// Zxid and a greater Pass ... A resource that fences writes keeps the
// greatest Fence it has seen and refuses any that is not above it", with
// rwlock/doc.go's "A fencing token per grant (Lease.Fence ...), growing
// strictly in the order of the grants ... Readers get tokens too" and its
// downgrade.
//
// Grants in this order: A's write lock; A's read lock (a downgrade, whose R
// node sorts after writer C's W node), released and taken again (a second
// downgrade under the same write grant); C's write lock, once A has
// released both. With the R node's czxid as its token, C's grant came last
// but had a smaller Fence than A's read grants, so a resource that saw A's
// read fence refused the next writer.
func TestRWLockDowngradeFenceBeforeNextWriter(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	sa := session(t, c.Servers())
	sc := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/rw-fence"
	rwA, _ := rwlock.New(sa, path)
	rwC, _ := rwlock.New(sc, path)

	wA, err := rwA.WriteLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fW, err := wA.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cGot := make(chan *conn.Lease, 1)
	cRel := make(chan struct{})
	cDone := make(chan struct{})
	go func() {
		defer close(cDone)
		l, err := rwC.WriteLock().Acquire(ctx)
		if err != nil {
			t.Errorf("C: %v", err)
			close(cGot)
			return
		}
		cGot <- l
		<-cRel
		_ = rwC.WriteLock().Release(context.WithoutCancel(ctx))
	}()
	defer func() { close(cRel); <-cDone }()
	waitFor(t, 10*time.Second, "C's W node", func() bool { return len(children(zc, path)) == 2 })

	rA, err := rwA.ReadLock().Acquire(ctx) // downgrade
	if err != nil {
		t.Fatal(err)
	}
	fR1, err := rA.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rwA.ReadLock().Release(ctx); err != nil {
		t.Fatal(err)
	}
	rA, err = rwA.ReadLock().Acquire(ctx) // a second downgrade
	if err != nil {
		t.Fatal(err)
	}
	fR, err := rA.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rwA.WriteLock().Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rwA.ReadLock().Release(ctx); err != nil {
		t.Fatal(err)
	}
	var lC *conn.Lease
	select {
	case lC = <-cGot:
	case <-time.After(10 * time.Second):
		t.Fatal("C not granted after A released both")
	}
	if lC == nil {
		t.FailNow()
	}
	fC, err := lC.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("grants in order: A write %v, A read %v, A read again %v, C write %v", fW, fR1, fR, fC)
	if fW.Compare(fR1) >= 0 || fR1.Compare(fR) >= 0 || fR.Compare(fC) >= 0 {
		t.Fatalf("fences not strictly growing in grant order: A write %v, A read (downgrade) %v, A read again %v, C write %v: a resource that kept %v refuses C",
			fW, fR1, fR, fC, fR)
	}
}
