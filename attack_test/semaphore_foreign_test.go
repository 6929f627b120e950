package attack_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_SemaphoreLeaseDataChangeIsNoRelease checks semaphoremutex/doc.go:
// "At most N holders among all processes using the path (Curator's
// InterProcessSemaphoreV2 ... included)" and "Otherwise it keeps the
// internal mutex and waits, with a data watch on N of the lease nodes, until
// one is deleted": a raw client takes both leases of a 2-lease semaphore the
// way Curator does (internal lock node, lease node, internal lock node
// deleted), with world-writable nodes as Curator makes them. Our waiter
// watches the two lease nodes; the raw client changes the data of both
// (also to sealed-looking data). The waiter must not get a lease until one
// lease node is deleted.
func TestProbe_SemaphoreLeaseDataChangeIsNoRelease(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	s := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/sem-foreign"
	for _, p := range []string{c.Root(), path, path + "/locks", path + "/leases"} {
		if _, err := zc.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	var leases []string
	for i := 0; i < 2; i++ {
		id := fmt.Sprintf("0b5e55ed-0000-4000-8000-00000000000%d", i)
		lk, err := zc.Create(path+"/locks/_c_"+id+"-lock-", []byte("127.0.0.1"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		ls, err := zc.Create(path+"/leases/_c_"+id+"-lease-", []byte("127.0.0.1"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		if err := zc.Delete(lk, -1); err != nil {
			t.Fatal(err)
		}
		leases = append(leases, ls)
	}
	sem, _ := semaphoremutex.NewSemaphore(s, path, 2)
	got := make(chan error, 1)
	go func() {
		l, err := sem.Acquire(ctx)
		got <- err
		if err == nil {
			_ = sem.ReturnLease(context.WithoutCancel(ctx), l)
		}
	}()
	waitFor(t, 10*time.Second, "the waiter's watches on both lease nodes", func() bool {
		return watched(c, 0, leases[0]) && watched(c, 0, leases[1])
	})
	for _, ls := range leases {
		data := `{"id":"x","host":"vm","pid":1,"tag":"sole-lease","sealed":true}`
		if _, err := zc.Set(ls, []byte(data), -1); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-got:
		t.Fatalf("our waiter got a lease (err=%v) while both foreign leases are held: 3 holders of 2", err)
	case <-time.After(1500 * time.Millisecond):
	}
	if err := zc.Delete(leases[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no lease 5 s after a foreign lease was deleted")
	}
}
