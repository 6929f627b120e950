package attack_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_SharedListingWaitersStartOverAfterExpiry checks package lock's
// "A session lost while waiting is not an error: Acquire starts over in the
// next one" for waiters of one session sharing their listing (a plain
// handle and a WithLocalHandoff handle, 10 goroutines) queued behind B:
// A's epoch is expired by the server. Every waiter must queue again in
// the next epoch and, once B releases, be granted one at a time, with no
// error, and nothing left at the end.
func TestProbe2_SharedListingWaitersStartOverAfterExpiry(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	path := c.Root() + "/r2-expwait/lock"
	bys := raw(t, c)
	sA := session(t, c.Servers())
	sB := session(t, c.Servers())
	mB, _ := mutex.New(sB, path)
	b := hold(ctx, mB)
	b.wait(t, 10*time.Second, "B")
	m1, _ := mutex.New(sA, path)
	m2, _ := mutex.New(sA, path, mutex.WithLocalHandoff(3, 0))
	var inside, granted int32
	var wg sync.WaitGroup
	const n = 10
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m := m1
			if i%2 == 1 {
				m = m2
			}
			actx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			if _, err := m.Acquire(actx); err != nil {
				t.Errorf("w%d: %v", i, err)
				return
			}
			if k := atomic.AddInt32(&inside, 1); k != 1 {
				t.Errorf("w%d: %d holders", i, k)
			}
			atomic.AddInt32(&granted, 1)
			time.Sleep(5 * time.Millisecond)
			atomic.AddInt32(&inside, -1)
			if err := m.Release(context.WithoutCancel(ctx)); err != nil {
				t.Errorf("w%d: release: %v", i, err)
			}
		}(i)
	}
	waitFor(t, 10*time.Second, "A's waiters queued", func() bool { return len(children(bys, path)) == 1+n/2+1 })
	ep, err := sA.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := zktest.ExpireEpoch(ctx, c.Servers()[0], ep); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "A's waiters queued again in the next epoch", func() bool {
		return len(children(bys, path)) == 1+n/2+1 && ep.Err() != nil
	})
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if granted != n {
		t.Fatalf("%d of %d waiters granted", granted, n)
	}
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
}

// TestProbe2_TryAcquireBesideLocalHandoffDoesNotWait checks package lock's
// "TryAcquire never waits for another holder: it returns (nil, false, nil)
// when the lock is taken" for a WithLocalHandoff handle whose node another
// goroutine of the process holds (and a third waits on in the process): it
// must return false within a short time, and leave the local queue as it
// was (the waiter is granted next, the TryAcquire caller never).
func TestProbe2_TryAcquireBesideLocalHandoffDoesNotWait(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	path := c.Root() + "/r2-try/lock"
	s := session(t, c.Servers())
	m, _ := mutex.New(s, path, mutex.WithLocalHandoff(3, 0))
	g1 := hold(ctx, m)
	l1 := g1.wait(t, 10*time.Second, "G1")
	g3 := hold(ctx, m)
	waitFor(t, 10*time.Second, "G3 waiting in the process", func() bool { return watched(c, 0, l1.Path()) })
	type res struct {
		ok  bool
		err error
	}
	ch := make(chan res, 1)
	t0 := time.Now()
	go func() {
		l, ok, err := m.TryAcquire(ctx)
		if ok {
			_ = l
			_ = m.Release(ctx)
		}
		ch <- res{ok, err}
	}()
	select {
	case r := <-ch:
		if r.ok || r.err != nil {
			t.Fatalf("TryAcquire beside a local holder: ok %v, err %v", r.ok, r.err)
		}
		t.Logf("TryAcquire returned false after %v", time.Since(t0))
	case <-time.After(3 * time.Second):
		t.Fatal("TryAcquire waits for the local holder")
	}
	if err := g1.stop(); err != nil {
		t.Fatal(err)
	}
	g3.wait(t, 10*time.Second, "G3")
	if err := g3.stop(); err != nil {
		t.Fatal(err)
	}
}
