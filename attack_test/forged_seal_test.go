package attack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_MutexRevocableNodeForgedSealKeepsWaiterOut (passes) checks, with a
// revocable holder, mutex/doc.go: "No write into the holder's node lets
// anyone else in. ... a waiter trusts a data change as its predecessor's
// release only on a node that was sealed when it read it", and, for
// WithRevocable, "the holder keeps the mutex until it releases it" (and
// Revoke's "Nobody else gets the mutex until the holder releases it").
//
// A revocable node carries the world's ACL, so a bystander may write it.
// It first writes the sealed nodes' data (their "sealed":true tag) into the
// holder's node, then, once the waiter behind has read it and watches it,
// writes once more. The holder has not released.
func TestProbe_MutexRevocableNodeForgedSealKeepsWaiterOut(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	sa := session(t, c.Servers())
	sb := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/forged-seal"

	ma, err := mutex.New(sa, path, mutex.WithRevocable())
	if err != nil {
		t.Fatal(err)
	}
	la, err := ma.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ma.Release(context.WithoutCancel(ctx))

	// The bystander makes the revocable node look sealed.
	data, st, err := zc.Get(la.Path())
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.TrimSuffix(string(data), "}") + `,"sealed":true}`
	if _, err := zc.Set(la.Path(), []byte(forged), st.Version); err != nil {
		t.Fatalf("bystander's first write (allowed on a revocable node): %v", err)
	}
	// ... and gives it a sealed node's ACL, with its own identity in the
	// place of the holder's.
	if err := zc.AddAuth("digest", []byte("evil:pw")); err != nil {
		t.Fatal(err)
	}
	sealedACL := append(zk.WorldACL(zk.PermRead|zk.PermCreate|zk.PermDelete), zk.DigestACL(zk.PermAll, "evil", "pw")...)
	if _, err := zc.SetACL(la.Path(), sealedACL, -1); err != nil {
		t.Fatalf("bystander's setACL (allowed on a revocable node): %v", err)
	}

	mb, err := mutex.New(sb, path)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		l   *conn.Lease
		err error
	}
	got := make(chan res, 1)
	go func() {
		l, err := mb.Acquire(ctx)
		got <- res{l, err}
		if err == nil {
			_ = mb.Release(context.WithoutCancel(ctx))
		}
	}()
	waitFor(t, 10*time.Second, "the waiter's watch on the holder's node", func() bool {
		return watched(c, 0, la.Path())
	})
	if _, err := zc.Set(la.Path(), []byte(forged), -1); err != nil {
		t.Fatalf("bystander's second write: %v", err)
	}

	select {
	case r := <-got:
		if r.err == nil {
			_, werr := r.l.GuardedWrite(ctx, &zk.CreateRequest{Path: c.Root() + "/b-was-here", Acl: zk.WorldACL(zk.PermAll)})
			t.Fatalf("two holders: B acquired %s while A (%s) still holds and never released; B's guarded write: %v; A's lease err: %v",
				r.l.Path(), la.Path(), werr, la.Err())
		}
		t.Fatalf("B's acquire failed: %v", r.err)
	case <-time.After(3 * time.Second):
		// B still waits: the promise held.
	}
	if err := ma.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("B after A's release: %v", r.err)
	}
}
