package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestRWLockDowngradeAfterForeignDeleteRefused checks
// rwlock/doc.go: "Readers share, writers exclude: while a writer holds the
// lock, no other contender (reader or writer, of any process using the lock
// path) holds it", with the downgrade of "# Downgrade" ("The read acquire
// queues a real R node, which is granted at once ...: nobody else can hold
// the lock while our W node exists. So the grant is made only if our W
// node still exists once the R node does ...: if someone else deleted it
// ..., the R node is deleted again and the acquire fails with
// conn.ErrLeaseLost") and the Errors section's "conn.ErrLeaseLost for a
// re-entry or downgrade on a lost lease".
//
// A holds the write lock and never looked at Lost. A bystander deletes A's W
// node (the parent's ACL lets anyone), so writer B, queued behind, gets the
// lock. A then takes the read lock (a downgrade): if it is granted, A reads
// while B writes, and A's read lease's guarded write commits, since its new
// R node exists. The downgrade must be refused with conn.ErrLeaseLost and
// leave no R node.
func TestRWLockDowngradeAfterForeignDeleteRefused(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	sa := session(t, c.Servers())
	sb := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/rw-downgrade"

	rwA, err := rwlock.New(sa, path)
	if err != nil {
		t.Fatal(err)
	}
	rwB, err := rwlock.New(sb, path)
	if err != nil {
		t.Fatal(err)
	}
	wA, err := rwA.WriteLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		l   *conn.Lease
		err error
	}
	bGot := make(chan res, 1)
	bRelease := make(chan struct{})
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		l, err := rwB.WriteLock().Acquire(ctx)
		bGot <- res{l, err}
		if err == nil {
			<-bRelease
			_ = rwB.WriteLock().Release(context.WithoutCancel(ctx))
		}
	}()
	defer func() { close(bRelease); <-bDone }()
	waitFor(t, 10*time.Second, "B's W node", func() bool { return len(children(zc, path)) == 2 })

	if err := zc.Delete(wA.Path(), -1); err != nil {
		t.Fatalf("bystander delete: %v", err)
	}
	var b res
	select {
	case b = <-bGot:
	case <-time.After(10 * time.Second):
		t.Fatal("B did not get the write lock after A's node was deleted")
	}
	if b.err != nil {
		t.Fatal(b.err)
	}

	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rA, err := rwA.ReadLock().Acquire(rctx)
	if err == nil {
		defer rwA.ReadLock().Release(context.WithoutCancel(ctx))
		_, werr := rA.GuardedWrite(ctx, &zk.CreateRequest{Path: c.Root() + "/a-read-under-b", Acl: zk.WorldACL(zk.PermAll)})
		t.Fatalf("A holds the read lock (%s) while B holds the write lock (%s); A's read guarded write: err=%v; B's lease err=%v",
			rA.Path(), b.l.Path(), werr, b.l.Err())
	}
	if !errors.Is(err, conn.ErrLeaseLost) {
		t.Fatalf("downgrade on a lost write lease: %v, want conn.ErrLeaseLost", err)
	}
	if kids := children(zc, path); len(kids) != 1 || kids[0] != conn.BaseName(b.l.Path()) {
		t.Errorf("after the refused downgrade the queue is %v, want only B's node", kids)
	}
	_ = rwA.WriteLock().Release(ctx)
}

// TestProbe_RWLockDowngradeAfterExpiryRefused is the same combination as
// TestRWLockDowngradeAfterForeignDeleteRefused with the
// write lease lost by a server-side expiry (zktest.ExpireEpoch) instead of
// a bystander's delete: rwlock/doc.go's "conn.ErrLeaseLost for a re-entry
// or downgrade on a lost lease". Once writer B holds, A's downgrade must
// not be granted.
func TestProbe_RWLockDowngradeAfterExpiryRefused(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	sa := session(t, c.Servers())
	sb := session(t, c.Servers())
	path := c.Root() + "/rw-downgrade-expiry"
	rwA, _ := rwlock.New(sa, path)
	rwB, _ := rwlock.New(sb, path)
	if _, err := rwA.WriteLock().Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	bGot := make(chan error, 1)
	bRelease := make(chan struct{})
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		_, err := rwB.WriteLock().Acquire(ctx)
		bGot <- err
		if err == nil {
			<-bRelease
			_ = rwB.WriteLock().Release(context.WithoutCancel(ctx))
		}
	}()
	defer func() { close(bRelease); <-bDone }()
	ep, err := sa.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := zktest.ExpireEpoch(ctx, c.Servers()[0], ep); err != nil {
		t.Fatal(err)
	}
	if err := <-bGot; err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rA, err := rwA.ReadLock().Acquire(rctx)
	if err == nil {
		defer rwA.ReadLock().Release(context.WithoutCancel(ctx))
		t.Fatalf("downgrade granted (%s) on a write lease lost with its epoch, while B writes", rA.Path())
	}
	if !errors.Is(err, conn.ErrLeaseLost) {
		t.Errorf("downgrade on an expired write lease: %v, want conn.ErrLeaseLost", err)
	}
	_ = rwA.WriteLock().Release(ctx)
}

// TestProbe_RWLockOtherGoroutineGetsNoDowngrade checks rwlock/doc.go:
// "Reentrancy per goroutine for both sides ... Another goroutine of the
// same process is a separate contender" against "# Downgrade" ("A goroutine
// that holds the write lock may take the read lock"): while goroutine G1
// holds the write lock, goroutine G2 of the same handle asking for the read
// lock is a reader like any other and must wait, through TryAcquire
// (false) and Acquire (deadline), also through a second handle on the same
// session.
func TestProbe_RWLockOtherGoroutineGetsNoDowngrade(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	s := session(t, c.Servers())
	path := c.Root() + "/rw-other-goroutine"
	rw, _ := rwlock.New(s, path)
	rw2, _ := rwlock.New(s, path)
	if _, err := rw.WriteLock().Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer rw.WriteLock().Release(context.WithoutCancel(ctx))
	for name, h := range map[string]*rwlock.RWLock{"same handle": rw, "second handle": rw2} {
		res := make(chan string, 1)
		go func() {
			if _, ok, err := h.ReadLock().TryAcquire(ctx); ok || err != nil {
				if ok {
					_ = h.ReadLock().Release(ctx)
				}
				res <- "TryAcquire from another goroutine while G1 writes: granted or failed"
				return
			}
			actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			if _, err := h.ReadLock().Acquire(actx); !errors.Is(err, context.DeadlineExceeded) {
				if err == nil {
					_ = h.ReadLock().Release(ctx)
				}
				res <- "Acquire from another goroutine while G1 writes: " + errString(err)
				return
			}
			res <- ""
		}()
		if r := <-res; r != "" {
			t.Errorf("%s: %s", name, r)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "granted"
	}
	return err.Error()
}
