package attack_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_SharedListingWaiterWhoseNodeWasDeleted checks mutex's "A lock
// node deleted by a third party while its owner is queued is noticed only
// once granted, through the lease" and conn.Lease's "Fence ... fails with
// ErrLeaseLost ... when the read finds the node gone", with waiters of one
// session that share their listing: W1 holds, W2 and W3 (same session) queue
// behind, a bystander deletes W2's node (W3 now follows W1). On W1's release
// both may be granted; W2's lease must then refuse guarded writes and its
// Fence, and its Lost must close, while W3's guarded write commits.
func TestProbe2_SharedListingWaiterWhoseNodeWasDeleted(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	path := c.Root() + "/r2-qdel/lock"
	reg := c.Root() + "/r2-qdel-reg"
	bys := raw(t, c)
	_, _ = bys.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll))
	if _, err := bys.Create(reg, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s := session(t, c.Servers())
	m, _ := mutex.New(s, path)
	w1 := hold(ctx, m)
	w1.wait(t, 10*time.Second, "W1")
	w2 := hold(ctx, m)
	waitFor(t, 10*time.Second, "W2 queued", func() bool { return len(children(bys, path)) == 2 })
	n2 := children(bys, path)
	w3 := hold(ctx, m)
	waitFor(t, 10*time.Second, "W3 queued", func() bool { return len(children(bys, path)) == 3 })
	// W2's node is the one of the two first that is not W1's: the newer.
	var w2node string
	_, st0, _ := bys.Get(path + "/" + n2[0])
	_, st1, _ := bys.Get(path + "/" + n2[1])
	if st0.Czxid > st1.Czxid {
		w2node = n2[0]
	} else {
		w2node = n2[1]
	}
	if err := bys.Delete(path+"/"+w2node, -1); err != nil {
		t.Fatal(err)
	}
	if err := w1.stop(); err != nil {
		t.Fatal(err)
	}
	l3 := w3.wait(t, 10*time.Second, "W3")
	if _, err := l3.GuardedWrite(ctx, &zk.SetDataRequest{Path: reg, Data: []byte("w3"), Version: -1}); err != nil {
		t.Fatalf("W3's guarded write: %v", err)
	}
	select {
	case l2 := <-w2.granted:
		t.Logf("W2 granted on its deleted node %s", l2.Path())
		if _, err := l2.GuardedWrite(ctx, &zk.SetDataRequest{Path: reg, Data: []byte("w2"), Version: -1}); !errors.Is(err, conn.ErrLeaseLost) {
			t.Fatalf("W2's guarded write beside W3: %v (want conn.ErrLeaseLost)", err)
		}
		if f, err := l2.Fence(ctx); !errors.Is(err, conn.ErrLeaseLost) {
			t.Fatalf("W2's fence: %v, %v (want conn.ErrLeaseLost)", f, err)
		}
		select {
		case <-l2.Lost():
		case <-time.After(5 * time.Second):
			t.Fatal("W2's Lost open on a deleted node")
		}
	case err := <-w2.failed:
		t.Logf("W2's acquire failed: %v", err)
	case <-time.After(2 * time.Second):
		t.Logf("W2 still waiting")
	}
	if err := w3.stop(); err != nil {
		t.Fatal(err)
	}
}
