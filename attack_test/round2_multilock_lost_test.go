package attack_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_MultiLockLostGoroutinesEnd checks multilock's "Lost closes when
// any lease is lost or on the first Release, even one that leaves locks
// held; the one goroutine behind it ends then" and the brief's "no orphan
// goroutine": a MultiLock over a mutex and a semaphore mutex with local
// handoff, Lost armed, released; the goroutine count must come back to
// where it was, with the session still open. Also logs what arming costs.
func TestProbe2_MultiLockLostGoroutinesEnd(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	s := session(t, c.Servers())
	a, _ := mutex.New(s, c.Root()+"/r2-ml/a", mutex.WithLocalHandoff(3, 0))
	b, _ := semaphoremutex.New(s, c.Root()+"/r2-ml/b", semaphoremutex.WithLocalHandoff(3, 0))
	ml, err := multilock.New(a, b)
	if err != nil {
		t.Fatal(err)
	}
	// Warm-up: the session's own goroutines.
	if _, err := ml.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ml.Release(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // settle; the check below waits on the count itself
	base := runtime.NumGoroutine()
	if _, err := ml.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	held := runtime.NumGoroutine()
	lost := ml.Lost()
	time.Sleep(300 * time.Millisecond) // let the watches be set; counted, not relied on
	armed := runtime.NumGoroutine()
	t.Logf("goroutines: %d before, %d held, %d with Lost armed", base, held, armed)
	if err := ml.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("Lost open after Release")
	}
	waitFor(t, 10*time.Second, "goroutines back after the release", func() bool { return runtime.NumGoroutine() <= base })
}
