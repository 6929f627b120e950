package attack_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_ExclusiveCreatePendingThenRace checks exclusive's "Never two
// holders" and "An acquire that fails before it could tell whether the node
// is ours ... its error matches lock.ErrCreatePending" with "the node is
// checked against our session id and the unique id in its data, and deleted
// if it is ours, in the background": A's create of the lock node is
// answered into a blackhole, the search for it too (a retry policy of one
// attempt); once A's Acquire fails with ErrCreatePending and the proxy
// heals, A (same handle) and B race for the lock, each holding 300 ms,
// three rounds each. A ledger and a guarded write per hold check that no two
// hold at once (the background delete of A's lost node must not delete the
// node of A's own new acquire, nor B's), and nothing is left at the end.
func TestProbe2_ExclusiveCreatePendingThenRace(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	path := c.Root() + "/r2-excl"
	reg := c.Root() + "/r2-excl-reg"
	bys := raw(t, c)
	_, _ = bys.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll))
	if _, err := bys.Create(reg, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	px := zktest.NewProxy(t, c.Servers())
	sA := session(t, px.Addrs(), conn.WithSessionTimeout(8*time.Second),
		conn.WithRetryPolicy(conn.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxAttempts: 1}))
	sB := session(t, c.Servers())
	lA, _ := exclusive.New(sA, path)
	lB, _ := exclusive.New(sB, path)
	// Parents first, so that the next write is the lock node's create.
	if _, err := lA.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lA.Release(ctx); err != nil {
		t.Fatal(err)
	}
	px.BlackholeAfterNextWrite()
	ech := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 12*time.Second)
		defer cancel()
		_, err := lA.Acquire(actx)
		ech <- err
	}()
	waitFor(t, 10*time.Second, "A's lost create on the server", func() bool { return len(children(bys, path)) == 1 })
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
					if _, err := lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: reg, Data: []byte(name), Version: -1}); err != nil {
						t.Errorf("%s: guarded write while holding: %v", name, err)
					}
					select {
					case <-lost:
						t.Errorf("%s: lease lost while holding (node deleted by the background delete?)", name)
					case <-time.After(100 * time.Millisecond):
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
	waitFor(t, 10*time.Second, "no lock node left", func() bool { return len(children(bys, path)) == 0 })
}
