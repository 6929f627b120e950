package attack_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_CloseWhileBlackholedWithEverythingInFlight checks conn's
// Session.Close (go doc ./conn Session.Close): "Close ends the current epoch
// ..., closes the connection and stops every goroutine of the session.
// Idempotent; returns within about a second even when no server is
// reachable", and Session.Done: "closed once the Session is closed (Close)
// and every goroutine of it has stopped", with, at the moment of Close, a
// blackholed connection and in flight: waiters of the mutex, rwlock,
// semaphore and leader, an Observe, a Run, held locks with armed Lost and a
// MultiLock's Lost goroutine, and releases pending in the background. Every
// call in flight must return, every channel close, and the process's
// goroutine count come back to where it was before Connect.
func TestProbe_CloseWhileBlackholedWithEverythingInFlight(t *testing.T) {
	c := zktest.New(t)
	px := zktest.NewProxy(t, c.Servers())
	sh := session(t, c.Servers()) // holds what the victim waits for
	ctx := ctxT(t, 25*time.Second)
	root := c.Root() + "/close-inflight"

	hm, _ := mutex.New(sh, root+"/m")
	if _, err := hm.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	hrw, _ := rwlock.New(sh, root+"/rw")
	if _, err := hrw.WriteLock().Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	hl, _ := leader.New(sh, root+"/l", "h")
	if _, err := hl.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	hs, _ := semaphoremutex.New(sh, root+"/s")
	if _, err := hs.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	baseline := runtime.NumGoroutine()

	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	s, err := conn.Connect(cctx, px.Addrs(), conn.WithSessionTimeout(4*time.Second))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = s.Close()
		}
	}()

	var pending []chan error
	start := func(f func() error) {
		ch := make(chan error, 1)
		pending = append(pending, ch)
		go func() { ch <- f() }()
	}
	// Waiters.
	wm, _ := mutex.New(s, root+"/m")
	start(func() error { _, err := wm.Acquire(ctx); return err })
	wrw, _ := rwlock.New(s, root+"/rw")
	start(func() error { _, err := wrw.ReadLock().Acquire(ctx); return err })
	ws, _ := semaphoremutex.New(s, root+"/s")
	start(func() error { _, err := ws.Acquire(ctx); return err })
	wl, _ := leader.New(s, root+"/l", "w")
	start(func() error {
		return wl.Run(ctx, func(context.Context) error { return nil })
	})
	obs := wl.Observe(ctx)
	// Holdings with armed Lost, a MultiLock's Lost goroutine.
	ma, _ := mutex.New(s, root+"/own-a")
	mb, _ := rwlock.New(s, root+"/own-b")
	ml, err := multilock.New(ma, mb.WriteLock())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ml.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	mlLost := ml.Lost()
	pm, _ := mutex.New(s, root+"/pending")
	pl, err := pm.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pLost := pl.Lost()
	time.Sleep(300 * time.Millisecond) // let the waiters queue (the test checks nothing about it)

	px.Blackhole()
	rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = pm.Release(rctx) // a release pending in the background
	rcancel()
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		t.Logf("release while blackholed: %v", err)
	}

	t0 := time.Now()
	if err := s.Close(); err != nil && !errors.Is(err, conn.ErrClosed) {
		t.Logf("Close: %v", err)
	}
	closed = true
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Close took %v while blackholed (doc: about a second)", d)
	}
	select {
	case <-s.Done():
	case <-time.After(12 * time.Second):
		t.Fatalf("Session.Done not closed 12 s after Close")
	}
	for i, ch := range pending {
		select {
		case err := <-ch:
			t.Logf("call %d returned: %v", i, err)
		case <-time.After(3 * time.Second):
			t.Errorf("call %d in flight still running 3 s after Close", i)
		}
	}
	for name, ch := range map[string]<-chan struct{}{"multilock Lost": mlLost, "pending lease Lost": pLost} {
		select {
		case <-ch:
		case <-time.After(2 * time.Second):
			t.Errorf("%s open after Close", name)
		}
	}
	drain := time.After(2 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-obs:
		case <-drain:
			t.Errorf("Observe's channel open 2 s after Close (doc: closed when ctx ends or the session is closed)")
			open = false
		}
	}
	px.Heal()
	var n int
	end := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		n = runtime.NumGoroutine()
		if n <= baseline || time.Now().After(end) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n > baseline {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines: %d before Connect, %d 5 s after Close\n%s", baseline, n, buf)
	}
}
