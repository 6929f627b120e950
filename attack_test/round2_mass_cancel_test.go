package attack_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_SharedListingMassCancelLeavesNoWatch checks conn's "A watch
// nobody waits on any more is removed from the server" and mutex's "Nothing
// is left behind: a failed, timed-out or cancelled acquire deletes its node",
// with this round's shared listings: B holds; 24 goroutines of session A
// queue on the path (through two handles, one with WithLocalHandoff), then
// all are cancelled at once (one ctx). With A still open, no node of A's
// and no watch of A's (wchp, any path under the lock path or the lock path
// itself) may remain, and the server's watch count (mntr
// zk_watch_count) must come back to what it was with B holding alone.
// Also with the cancel made while A is disconnected (reset, reconnects
// blackholed), A reconnecting to the same session afterwards: the watches
// "do not come back on a reconnect".
func TestProbe2_SharedListingMassCancelLeavesNoWatch(t *testing.T) {
	for _, cut := range []bool{false, true} {
		name := "connected"
		if cut {
			name = "cancelled-while-disconnected"
		}
		t.Run(name, func(t *testing.T) { massCancel(t, cut) })
	}
}

func massCancel(t *testing.T, cut bool) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	path := c.Root() + "/r2-mass/lock"
	bys := raw(t, c)
	px := zktest.NewProxy(t, c.Servers())
	sA := session(t, px.Addrs(), conn.WithSessionTimeout(8*time.Second))
	sB := session(t, c.Servers())
	mB, _ := mutex.New(sB, path)
	b := hold(ctx, mB)
	b.wait(t, 10*time.Second, "B")
	watchCount := func() string {
		m, err := c.Mntr(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return m["zk_watch_count"]
	}
	base := watchCount()
	hs := []*mutex.InterProcessMutex{}
	m1, _ := mutex.New(sA, path)
	m2, _ := mutex.New(sA, path, mutex.WithLocalHandoff(3, 0))
	hs = append(hs, m1, m2)
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	const n = 24
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := hs[i%2].Acquire(actx)
			errs <- err
		}(i)
	}
	// Every plain waiter has a node; the handoff ones share one.
	waitFor(t, 10*time.Second, "A's waiters queued", func() bool { return len(children(bys, path)) == 1+n/2+1 })
	time.Sleep(300 * time.Millisecond) // let the waiters set their watches; the check below does not rely on it
	t.Logf("watches with the queue: %s (B alone: %s)", watchCount(), base)
	if cut {
		px.Blackhole()
		px.Cut()
		waitFor(t, 5*time.Second, "A suspended", func() bool { return sA.State() == conn.Suspended })
	}
	cancel()
	wg.Wait()
	if cut {
		px.Heal()
		waitFor(t, 10*time.Second, "A reconnected", func() bool { return sA.State() == conn.Reconnected })
	}
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("acquire: %v", err)
		}
	}
	waitFor(t, 10*time.Second, "only B's node left", func() bool { return len(children(bys, path)) == 1 })
	waitFor(t, 10*time.Second, "the watch count back to B's alone", func() bool { return watchCount() == base })
	out, err := c.FourLetter(ctx, 0, "wchc")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wchc after the cancel:\n%s", out)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
}
