package attack_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestEveryCallAfterCloseFailsAtOnce checks conn's "ErrClosed is
// returned by every call made after Close" (go doc ./conn ErrClosed) and the
// recipes' "conn.ErrClosed after Close": with a context that never ends,
// every call on a closed Session — and on a lease taken before Close —
// returns within a second, with an error matching conn.ErrClosed (or, for
// an epoch's operations, conn.ErrEpochEnded); Observe's channel closes.
func TestEveryCallAfterCloseFailsAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.Session()
	root := f.Path("after-close")
	held, _ := mutex.New(s, root+"/held")
	l, err := held.Acquire(ctx)
	require.NoError(t, err)
	r := oneOfEach(s, root)
	if err := s.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	calls := map[string]func(context.Context) error{
		"connlink.Epoch": func(ctx context.Context) error { _, err := connlink.Of(s).Epoch(ctx); return err },
		"Session.Get":    func(ctx context.Context) error { _, _, err := s.Get(ctx, root); return err },
		"Session.Set":    func(ctx context.Context) error { _, err := s.Set(ctx, root, nil, -1); return err },
		"Session.Create": func(ctx context.Context) error {
			_, err := s.Create(ctx, root+"-c", nil, 0, connlink.Of(s).ACL())
			return err
		},
		"Session.Delete":   func(ctx context.Context) error { return s.Delete(ctx, root, -1) },
		"Session.Children": func(ctx context.Context) error { _, _, err := s.Children(ctx, root); return err },
		"Session.Exists":   func(ctx context.Context) error { _, _, err := s.Exists(ctx, root); return err },
		"mutex.Acquire":    acquireErr(r.m),
		"mutex.TryAcquire": tryErr(r.m),
		"rwlock.Read":      acquireErr(r.rw.ReadLock()),
		"rwlock.Write":     acquireErr(r.rw.WriteLock()),
		"semaphoremutex":   acquireErr(r.sm),
		"semaphore":        acquireErr(r.sem),
		"exclusive":        acquireErr(r.x),
		"leader.Campaign":  func(ctx context.Context) error { _, err := r.e.Campaign(ctx); return err },
		"leader.Run": func(ctx context.Context) error {
			return r.e.Run(ctx, func(context.Context, *conn.Lease) error { return nil })
		},
		"leader.Leader":       func(ctx context.Context) error { _, err := r.e.Leader(ctx); return err },
		"leader.Participants": func(ctx context.Context) error { _, err := r.e.Participants(ctx); return err },
		"multilock.Acquire":   func(ctx context.Context) error { _, err := r.ml.Acquire(ctx); return err },
		"mutex.Participants":  func(ctx context.Context) error { _, err := r.m.Participants(ctx); return err },
		"Lease.GuardedWrite":  func(ctx context.Context) error { return guardedCreate(ctx, l, root+"-res") },
		"Lease.Epoch.Get":     func(ctx context.Context) error { _, _, err := connlink.Of(l.Epoch()).Get(ctx, "/"); return err },
	}
	for name, call := range calls {
		done := make(chan error, 1)
		go func() { done <- call(ctx) }()
		err, ok := within(done, time.Second)
		switch {
		case !ok:
			t.Errorf("%s after Close still running after 1 s (ctx never ends)", name)
		case name == "Lease.GuardedWrite":
			if !errors.Is(err, conn.ErrLeaseLost) && !errors.Is(err, conn.ErrClosed) && !errors.Is(err, conn.ErrEpochEnded) {
				t.Errorf("%s after Close: %v", name, err)
			}
		case !errors.Is(err, conn.ErrClosed) && !errors.Is(err, conn.ErrEpochEnded):
			t.Errorf("%s after Close: %v, want conn.ErrClosed", name, err)
		}
	}
	// On the goroutine that took it: lock's "Release after loss (Lost
	// closed) returns nil".
	if err := held.Release(ctx); err != nil {
		t.Errorf("held.Release after Close: %v, want nil (the node went with the session)", err)
	}
	if !closesWithin(r.e.Observe(ctx), time.Second) {
		t.Fatal("Observe's channel after Close not closed within 1 s")
	}
}

// TestCloseWhileBlackholedWithEverythingInFlight checks conn's
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
func TestCloseWhileBlackholedWithEverythingInFlight(t *testing.T) {
	f := newFixture(t)
	px := f.Proxy()
	sh := f.Session() // holds what the victim waits for
	ctx := ctxT(t, 25*time.Second)
	root := f.Path("close-inflight")

	hm, _ := mutex.New(sh, root+"/m")
	_, err := hm.Acquire(ctx)
	require.NoError(t, err)
	hrw, _ := rwlock.New(sh, root+"/rw")
	_, err = hrw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	hl, _ := leader.New(sh, root+"/l", "h")
	_, err = hl.Campaign(ctx)
	require.NoError(t, err)
	hs, _ := semaphoremutex.New(sh, root+"/s")
	_, err = hs.Acquire(ctx)
	require.NoError(t, err)
	runtime.GC()
	baseline := runtime.NumGoroutine()

	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	s, err := conn.Connect(cctx, px.Addrs(), conn.WithSessionTimeout(4*time.Second))
	cancel()
	require.NoError(t, err)
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
		return wl.Run(ctx, func(context.Context, *conn.Lease) error { return nil })
	})
	obs := wl.Observe(ctx)
	// Holdings with armed Lost, a MultiLock's Lost goroutine.
	ma, _ := mutex.New(s, root+"/own-a")
	mb, _ := rwlock.New(s, root+"/own-b")
	ml, err := multilock.New(ma, mb.WriteLock())
	require.NoError(t, err)
	_, err = ml.Acquire(ctx)
	require.NoError(t, err)
	mlLost := ml.Lost()
	pm, _ := mutex.New(s, root+"/pending")
	pl, err := pm.Acquire(ctx)
	require.NoError(t, err)
	pLost := pl.Lost()
	time.Sleep(300 * time.Millisecond) // let the waiters queue (the test checks nothing about it)

	px.Blackhole()
	_, err = timed(ctx, 300*time.Millisecond, pm.Release) // a release pending in the background
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
	recv(t, s.Done(), 12*time.Second, "Session.Done not closed 12 s after Close")
	for i, ch := range pending {
		if err, ok := within(ch, 3*time.Second); ok {
			t.Logf("call %d returned: %v", i, err)
		} else {
			t.Errorf("call %d in flight still running 3 s after Close", i)
		}
	}
	for name, ch := range map[string]<-chan struct{}{"multilock Lost": mlLost, "pending lease Lost": pLost} {
		if _, ok := within(ch, 2*time.Second); !ok {
			t.Errorf("%s open after Close", name)
		}
	}
	if !closesWithin(obs, 2*time.Second) {
		t.Errorf("Observe's channel open 2 s after Close (doc: closed when ctx ends or the session is closed)")
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

// TestSubscribeNeverDropsUnderCutsAndExpiry checks Session.Subscribe's doc:
// "every state transition after the call, in order, never dropping one
// however slowly the channel is read": one subscription is read as events come, another is
// not read at all while the proxy cuts the connection 8 times and the
// server expires the session twice; then the second must hold exactly the
// same events, in the same order.
func TestSubscribeNeverDropsUnderCutsAndExpiry(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 28*time.Second)
	// The last-heard timer: a cut must bring the same session back
	// (Reconnected) however long go-zookeeper takes to redial; the quorum
	// timer may end the epoch first when the redial takes longer than about
	// T/3 (conn's "The local timer").
	px, s := f.ProxiedSession(conn.WithLastHeardTimer())
	live := s.Subscribe(ctx)
	slow := s.Subscribe(ctx)
	var seen []conn.Event
	wait := func(st conn.State) {
		t.Helper()
		for {
			ev, ok := <-live
			if !ok {
				t.Fatalf("waiting for %v: %v (seen %s)", st, ctx.Err(), transitions(seen...))
			}
			seen = append(seen, ev)
			if ev.State == st {
				return
			}
		}
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < 4; i++ {
			px.Cut()
			wait(conn.Reconnected)
		}
		f.Expire(ctx, epochOf(t, s))
		wait(conn.Connected)
	}
	for i, want := range seen {
		var got conn.Event
		select {
		case got = <-slow:
		case <-time.After(time.Second):
			t.Fatalf("slow subscription: event %d: none within 1 s (want %s)", i, transitions(want))
		}
		if got.State != want.State || got.Epoch != want.Epoch {
			t.Fatalf("slow subscription: event %d is %s, the live one saw %s", i, transitions(got), transitions(want))
		}
	}
	t.Logf("%d events, the same on both subscriptions", len(seen))
}

// transitions formats events for a failure message.
func transitions(evs ...conn.Event) string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		var id int64
		if ev.Epoch != nil {
			id = ev.Epoch.SessionID()
		}
		out[i] = fmt.Sprintf("%v(session 0x%x, err %v)", ev.State, id, ev.Err)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// TestValidatePathEdges checks zkpath.Validate (go doc ./internal/zkpath
// Validate): "not empty, starting with "/", no trailing "/" (except the
// root), no empty, "." or ".." segment, no NUL or other character the server
// rejects, and not in the /zookeeper tree the server reserves."
// on the edges: a sibling of /zookeeper whose name starts with it is not in
// its tree; "..." and ".x" are ordinary names.
func TestValidatePathEdges(t *testing.T) {
	ok := []string{"/", "/zookeeperx", "/zookeeper-locks/a", "/a/...", "/a/.x", "/a/x..", "/a b", "/ü"}
	for _, p := range ok {
		if err := zkpath.Validate(p); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", p, err)
		}
	}
	reserved := []string{"/zookeeper", "/zookeeper/quota", "/zookeeper/config"}
	for _, p := range reserved {
		if err := zkpath.Validate(p); !errors.Is(err, conn.ErrInvalidArgument) || !strings.Contains(err.Error(), "is reserved") {
			t.Errorf("Validate(%q) = %v, want ErrInvalidArgument (reserved)", p, err)
		}
	}
	bad := []string{"", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/a/.", "/a\x00b", "/a\u0001b", "/a\ufffeb", "/a\u007fb", "/a\u0085b", "/a\ue000b"}
	for _, p := range bad {
		if err := zkpath.Validate(p); !errors.Is(err, conn.ErrInvalidArgument) || strings.Contains(err.Error(), "is reserved") {
			t.Errorf("Validate(%q) = %v, want ErrInvalidArgument (not reserved)", p, err)
		}
	}
}
