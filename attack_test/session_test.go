package attack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
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
	f, ctx := setUp(t, 28*time.Second)
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
	for pass := 0; pass < 2; pass++ {
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

// TestNamespacePathsAreOneCoordinateSystem checks, under
// conn.WithNamespace ("a chroot that callers never see"), that the paths the
// public API hands out (Lease.Path, Participant.Node) are the ones it takes
// back (Session.Exists, Revoke), for mutex, rwlock, semaphore mutex and
// leader; that a lock taken through a namespace excludes one taken through
// the full path without it (one lock, multilock/doc.go's "One lock is one
// lock"); that GuardedWrite's ops are namespaced; and that multilock.New
// refuses the same full path reached through two namespaces
// (conn.ErrInvalidArgument).
func TestNamespacePathsAreOneCoordinateSystem(t *testing.T) {
	f, ctx := setUp(t, 25*time.Second)
	ns := f.Path("ns")
	sn := f.Session(conn.WithNamespace(ns))
	sp := f.Session() // plain, sees the full paths
	zc := f.Raw()
	// foundBySession: the lease's path is the one its session takes back.
	foundBySession := func(t *testing.T, l *conn.Lease) {
		t.Helper()
		if ok, _, err := sn.Exists(ctx, l.Path()); !ok || err != nil {
			t.Errorf("Lease.Path %q not found through its session: %v %v", l.Path(), ok, err)
		}
	}
	// keptOut: the same lock through its full path, without a namespace,
	// is taken.
	keptOut := func(t *testing.T, what string, other tryAcquirer, release func(context.Context) error) {
		t.Helper()
		if _, ok, err := other.TryAcquire(ctx); ok || err != nil {
			t.Errorf("%s through the full path: ok=%v err=%v, want (false, nil)", what, ok, err)
			if ok {
				_ = release(ctx)
			}
		}
	}
	// heldAlone: lk, taken through the namespace, is found by its session
	// and is the one participant; it returns the lease and the node listed.
	heldAlone := func(t *testing.T, lk interface {
		acquirer
		Participants(context.Context) ([]lock.Participant, error)
	}) (*conn.Lease, string) {
		t.Helper()
		l, err := lk.Acquire(ctx)
		require.NoError(t, err)
		foundBySession(t, l)
		ps, err := lk.Participants(ctx)
		if err != nil || len(ps) != 1 {
			t.Fatalf("Participants %+v (%v), want one", ps, err)
		}
		return l, ps[0].Node
	}
	// revokedBy: Revoke of the node Participants lists reaches the lease.
	revokedBy := func(t *testing.T, l *conn.Lease, node string) {
		t.Helper()
		rev := l.Revoked()
		if err := lock.Revoke(ctx, sn, node); err != nil {
			t.Errorf("Revoke(Participant.Node %q) under a namespace: %v", node, err)
		}
		if _, ok := within(rev, 5*time.Second); !ok {
			t.Errorf("Revoked not closed after Revoke(Participant.Node %q), lease %q", node, l.Path())
		}
	}

	t.Run("mutex", func(t *testing.T) {
		m, _ := mutex.New(sn, "/m", lock.WithRevocable())
		l, node := heldAlone(t, m)
		if node != l.Path() {
			t.Errorf("Participants lists %q, want the lease's Node %q", node, l.Path())
		}
		other, _ := mutex.New(sp, connlink.Of(sn).FullPath("/m"))
		keptOut(t, "TryAcquire of the same lock", other, other.Release)
		// GuardedWrite is namespaced.
		_, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: "/m-res", Data: []byte("x"), Acl: zkWorld})
		require.NoError(t, err)
		if !exists(zc, ns+"/m-res") {
			t.Errorf("GuardedWrite's create did not land at %s", ns+"/m-res")
		}
		revokedBy(t, l, node)
		require.NoError(t, m.Release(ctx))
	})
	t.Run("rwlock", func(t *testing.T) {
		rw, _ := rwlock.New(sn, "/rw")
		l, err := rw.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		foundBySession(t, l)
		other, _ := rwlock.New(sp, connlink.Of(sn).FullPath("/rw"))
		keptOut(t, "read TryAcquire while written", other.ReadLock(), other.ReadLock().Release)
		require.NoError(t, rw.WriteLock().Release(ctx))
	})
	t.Run("semaphoremutex", func(t *testing.T) {
		m, _ := semaphoremutex.New(sn, "/s", lock.WithRevocable())
		l, node := heldAlone(t, m)
		revokedBy(t, l, node)
		other, _ := semaphoremutex.New(sp, connlink.Of(sn).FullPath("/s"))
		keptOut(t, "TryAcquire", other, other.Release)
		require.NoError(t, m.Release(ctx))
	})
	t.Run("leader", func(t *testing.T) {
		e, _ := leader.New(sn, "/l", "n")
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		p, err := e.Leader(ctx)
		if err != nil || p.Node != l.Path() || p.ID != "n" {
			t.Errorf("Leader %+v (%v), want Node %q", p, err, l.Path())
		}
		o, _ := leader.New(sp, connlink.Of(sn).FullPath("/l"), "p")
		if p2, err := o.Leader(ctx); err != nil || p2.ID != "n" {
			t.Errorf("Leader through the full path: %+v %v", p2, err)
		}
		require.NoError(t, e.Resign(ctx))
	})
	t.Run("multilock", func(t *testing.T) {
		f := f.In(t)
		a, _ := mutex.New(sn, "/x/y")
		sn2 := f.Session(conn.WithNamespace(ns + "/x"))
		b, _ := mutex.New(sn2, "/y")
		if _, err := multilock.New(a, b); !errors.Is(err, conn.ErrInvalidArgument) || !strings.Contains(err.Error(), "two locks on the same path") {
			t.Errorf("multilock.New over %s reached through two namespaces: %v, want ErrInvalidArgument (two locks on the same path)", connlink.Of(sn).FullPath("/x/y"), err)
		}
	})
}

// TestNamespaceDigestUnderCutAndExpiry: sessions with
// conn.WithNamespace, conn.WithDigestAuth and a digest-only ACL
// (conn.WithACL), A through a proxy, queue on one mutex: A holds, B waits.
//   - the zkrecipes command with -namespace and -auth (docs/operations.md: "the
//     chroot your services use with conn.WithNamespace, so that PATH is the
//     path they use"; "-auth user:password ... when the lock tree is not
//     world-readable") shows A holding and B waiting, as Participants does;
//     without -auth it exits 5 ("authentication refused: ZooKeeper answered
//     NOAUTH");
//   - A's connection is cut while it holds (the same session comes back):
//     WithDigestAuth's credentials are "sent to the server at the start of
//     every session", and a connection that comes back must still be allowed
//     to delete under the digest-only parent: A's Release must be nil and B
//     granted;
//   - then B's session is expired by the server while C waits: C is granted,
//     and the command shows C holding under its session.
func TestNamespaceDigestUnderCutAndExpiry(t *testing.T) {
	bin := zkrecipesBin(t)
	f, ctx := setUp(t, 60*time.Second)
	ns := f.Path("ns")
	acl := zk.DigestACL(zk.PermAll, "svc", "secret")
	opts := []conn.Option{conn.WithNamespace(ns), conn.WithDigestAuth("svc", "secret"), conn.WithACL(acl)}
	px, sa := f.ProxiedSession(opts...)
	sb := f.Session(opts...)
	// the namespace root, readable by the service only
	zc := f.Raw()
	require.NoError(t, zc.AddAuth("digest", []byte("svc:secret")))
	ensure(t, zc, zkWorld, f.Root())
	ensure(t, zc, acl, ns)
	queue := ns + "/locks/x"
	ma, _ := mutex.New(sa, "/locks/x")
	mb, _ := mutex.New(sb, "/locks/x")
	mc, _ := mutex.New(f.Session(opts...), "/locks/x")
	ha := hold(ctx, ma)
	la := ha.wait(t, 60*time.Second, "ha")
	hb := hold(ctx, mb)
	waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(zc, queue)) == 2 })

	run := func(args ...string) (locksQueue, int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-servers", strings.Join(f.Servers(), ","), "-timeout", "5s"}, args...)...)
		cmd.Env = append(os.Environ(), "ZK_AUTH=", "ZK_NAMESPACE=", "ZK_SERVERS=")
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return locksQueue{}, ee.ExitCode(), string(out)
		}
		require.NoError(t, err)
		var doc locksDoc
		require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
		require.Len(t, doc.Queues, 1, "queues: %s", out)
		return doc.Queues[0], 0, string(out)
	}
	q, code, out := run("-namespace", ns, "-auth", "svc:secret", "-json", "locks", "/locks")
	if code != 0 || len(q.Nodes) != 2 || q.Nodes[0].Status != "holds" || q.Nodes[1].Status != "waits" || !strings.HasSuffix(la.Path(), q.Nodes[0].Name) {
		t.Fatalf("command: code %d, %s (A holds %s)", code, out, la.Path())
	}
	if q.Path != "/locks/x" {
		t.Errorf("queue path %q, want the path the services use, /locks/x", q.Path)
	}
	ps, err := mc.Participants(ctx)
	if err != nil || len(ps) != 2 || !ps[0].Holding || ps[0].Node != la.Path() {
		t.Fatalf("Participants: %v %+v", err, ps)
	}
	if _, code, out := run("-namespace", ns, "-json", "locks", "/locks"); code != 5 {
		t.Errorf("without -auth: exit %d, want 5: %s", code, out)
	}

	// A's connection cut while it holds; the same session comes back.
	sidA := epochOf(t, sa).SessionID()
	px.Cut()
	waitFor(t, 10*time.Second, "A reconnected", func() bool {
		ep, err := connlink.Of(sa).Epoch(ctx)
		return err == nil && ep.SessionID() == sidA
	})
	require.NoError(t, ha.release(), "A's Release after a cut, digest-only parent")
	lb, ok := hb.granted(t, 10*time.Second, "B")
	if !ok {
		t.Fatalf("B not granted: %v", children(zc, queue))
	}
	hc := hold(ctx, mc)
	waitFor(t, 10*time.Second, "C queued", func() bool { return len(children(zc, queue)) == 2 })
	f.Expire(ctx, epochOf(t, sb))
	lc, ok := hc.granted(t, 10*time.Second, "C")
	if !ok {
		t.Fatalf("C not granted after B's expiry: %v", children(zc, queue))
	}
	recv(t, lb.Lost(), 10*time.Second, "B's Lost not closed after its expiry")
	q, code, out = run("-namespace", ns, "-auth", "svc:secret", "-json", "locks", "/locks")
	if code != 0 || len(q.Nodes) != 1 || q.Nodes[0].Status != "holds" || !strings.HasSuffix(lc.Path(), q.Nodes[0].Name) {
		t.Fatalf("command after B's expiry: code %d, %s (C holds %s)", code, out, lc.Path())
	}
	if err := hb.release(); err != nil {
		t.Errorf("B's Release after loss: %v", err)
	}
	require.NoError(t, hc.release())
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(zc, queue)) == 0 })
}

// waitPair is a holder in one session and a waiter in another, on one
// path: hold takes the lock, wait waits for it.
type waitPair struct {
	hold, wait func(ctx context.Context) error
}

// waitPairs makes, for each recipe, a holder in sh and a waiter in sw.
func waitPairs(sh, sw *conn.Session) map[string]func(t *testing.T, path string) waitPair {
	// pair: the holder acquires holds times (a semaphore's every lease)
	pair := func(holder, waiter string, holds int) func(*testing.T, string) waitPair {
		return func(t *testing.T, path string) waitPair {
			h, w := newLocker(t, holder, sh, path, 0), newLocker(t, waiter, sw, path, 1)
			return waitPair{func(ctx context.Context) error {
				for i := 0; i < holds; i++ {
					if _, err := h.Acquire(ctx); err != nil {
						return err
					}
				}
				return nil
			}, acquireErr(w)}
		}
	}
	return map[string]func(*testing.T, string) waitPair{
		"mutex":                    pair("mutex", "mutex", 1),
		"rwlock-read-behind-write": pair("rwlock-write", "rwlock-read", 1),
		"rwlock-write-behind-read": pair("rwlock-read", "rwlock-write", 1),
		"semaphoremutex":           pair("semaphoremutex", "semaphoremutex", 1),
		"semaphore-2":              pair("semaphore-2", "semaphore-2", 2),
		"exclusive":                pair("exclusive", "exclusive", 1),
		"leader":                   pair("leader", "leader", 1),
		"multilock": func(t *testing.T, path string) waitPair {
			h, _ := mutex.New(sh, path+"/b")
			a, _ := mutex.New(sw, path+"/a")
			b, _ := mutex.New(sw, path+"/b")
			m, _ := multilock.New(b, a)
			return waitPair{acquireErr(h), func(ctx context.Context) error { _, err := m.Acquire(ctx); return err }}
		},
	}
}

// heldPair makes mk's pair on path and has its holder take the lock; it
// returns the pair and the ephemeral nodes under path then.
func heldPair(t *testing.T, ctx context.Context, f *fixture, mk func(*testing.T, string) waitPair, path string) (waitPair, int) {
	t.Helper()
	p := mk(t, path)
	require.NoError(t, p.hold(ctx))
	return p, countNodes(f.Raw(), path)
}

// nothingLeft reports an error unless, within d, server 0 lists no watch
// under path and the ephemeral nodes under it are back to before; after
// says when, for the message.
func nothingLeft(t *testing.T, f *fixture, path string, before int, d time.Duration, after string) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		ws, n := watchesUnder(f, 0, path), countNodes(f.Raw(), path)
		if len(ws) == 0 && n == before {
			return
		}
		if time.Now().After(end) {
			if len(ws) != 0 {
				t.Errorf("watches left on the server %s: %v", after, ws)
			}
			if n != before {
				t.Errorf("ephemeral nodes under %s: %d before the waiter, %d %s", path, before, n, after)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNoWatchLeftByTimedOutWaiter checks conn/doc.go: "A watch nobody
// waits on any more is removed from the server. The recipes tell the epoch
// when a waiter gives up" and the BRIEF's "No orphan node, watch or
// goroutine after cancel/timeout", for a waiter of every recipe whose ctx
// deadline ends while another session holds: once Acquire has returned, no
// node of the waiter is left and the server lists no watch under the path.
// semaphore-2 and semaphoremutex/doc.go: "A waiter that gives up removes
// its watches from the server" (its watches on N lease nodes).
func TestNoWatchLeftByTimedOutWaiter(t *testing.T) {
	f := newFixture(t)
	sh := f.Session() // holder, never arms Lost
	sw := f.Session() // waiter
	_ = f.Raw()       // the bystander, made here rather than in a subtest
	mk := waitPairs(sh, sw)
	for name, mkPair := range mk {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := f.Path("watch-leak-") + name
			p, before := heldPair(t, ctx, f, mkPair, path)
			took, err := timed(ctx, 800*time.Millisecond, p.wait)
			if took > 800*time.Millisecond+250*time.Millisecond {
				t.Errorf("waiter returned %v after its ctx began (deadline 800 ms)", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("waiter: %v, want DeadlineExceeded", err)
			}
			nothingLeft(t, f, path, before, 3*time.Second, "3 s after the waiter gave up")
		})
	}
}

// TestNoWatchLeftByWaiterTimedOutWhileBlackholed checks conn/doc.go:
// "when no other watcher of the session waits on that path and kind ...
// the server's watch is removed with removeWatches ..., and it does not
// come back on a reconnect", and each recipe's "Nothing is left behind: a
// failed, timed-out or cancelled acquire deletes its node ... What cannot be
// done within those 100 ms goes on in the background", for a waiter whose
// deadline ends while its connection is blackholed, the same session coming
// back afterwards (the blackhole is shorter than the session timeout).
func TestNoWatchLeftByWaiterTimedOutWhileBlackholed(t *testing.T) {
	f := newFixture(t)
	sh := f.Session()
	px, sw := f.ProxiedSession()
	_ = f.Raw() // the bystander, made here rather than in a subtest
	mk := waitPairs(sh, sw)
	for _, name := range []string{"mutex", "rwlock-read-behind-write", "semaphore-2", "exclusive", "leader"} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 25*time.Second)
			path := f.Path("bh-watch-") + name
			p, before := heldPair(t, ctx, f, mk[name], path)
			ep, err := connlink.Of(sw).Epoch(ctx)
			require.NoError(t, err)
			sid := ep.SessionID()
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- p.wait(wctx) }()
			waitFor(t, 5*time.Second, "the waiter's watch", func() bool {
				return len(watchesUnder(f, 0, path)) > 0
			})
			px.Blackhole()
			time.Sleep(200 * time.Millisecond) // the waiter is cut off (observable only by time)
			cancel()
			start := time.Now()
			err, ok := within(done, 3*time.Second)
			if !ok {
				px.Heal()
				t.Fatalf("waiter did not return 3 s after cancel while blackholed")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("waiter: %v, want context.Canceled", err)
			}
			if took := time.Since(start); took > 250*time.Millisecond {
				t.Errorf("waiter returned %v after cancel while blackholed", took)
			}
			px.Heal()
			waitFor(t, 10*time.Second, "the waiter's session to be back", func() bool {
				ep, err := connlink.Of(sw).Epoch(ctx)
				return err == nil && ep.Err() == nil && sw.State().String() != "Suspended"
			})
			if ep2, _ := connlink.Of(sw).Epoch(ctx); ep2.SessionID() != sid {
				t.Skipf("the session was not kept across the blackhole (%x -> %x): nothing to check", sid, ep2.SessionID())
			}
			nothingLeft(t, f, path, before, 5*time.Second, "5 s after the session came back")
		})
	}
}

// TestSharedWatchSurvivesOneWaiterGivingUp checks conn/doc.go: "A
// watch nobody waits on any more is removed from the server ... when no
// other watcher of the session waits on that path and kind", from the other
// side: when one waiter of a session gives up, another waiter of the same
// session on the same node must still be woken.
//   - rwlock: two readers of one session (two handles) queued behind one
//     writer both watch its W node; one times out; the writer releases; the
//     other must get the read lock.
//   - semaphore: two Semaphore handles (N=2) of one session wait: the first
//     holds the internal mutex and watches the lease nodes; it times out;
//     a lease is released; the second must get a lease.
//   - leader: two Observe calls on one session; one is cancelled; the other
//     must still see the leader change.
func TestSharedWatchSurvivesOneWaiterGivingUp(t *testing.T) {
	f := newFixture(t)
	sh := f.Session()
	sw := f.Session()
	t.Run("rwlock", func(t *testing.T) {
		f := f.In(t)
		ctx := ctxT(t, 20*time.Second)
		path := f.Path("shared-rw")
		h := newRW(t, sh, path)
		_, err := h.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		r1, r2 := newRW(t, sw, path), newRW(t, sw, path)
		h2 := hold(ctx, r2.ReadLock())
		waitFor(t, 5*time.Second, "r2 queued", func() bool { return len(children(f.Raw(), path)) == 2 })
		if _, err := timed(ctx, 500*time.Millisecond, acquireErr(r1.ReadLock())); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("r1: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // give a wrong watch removal time to reach the server
		require.NoError(t, h.WriteLock().Release(ctx))
		h2.wait(t, 5*time.Second, "r2 not woken 5 s after the writer released: its watch went with r1's")
		require.NoError(t, h2.release())
	})
	t.Run("semaphore", func(t *testing.T) {
		f := f.In(t)
		ctx := ctxT(t, 20*time.Second)
		path := f.Path("shared-sem")
		h := newLocker(t, "semaphore-2", sh, path, 0)
		for i := 0; i < 2; i++ {
			_, err := h.Acquire(ctx)
			require.NoError(t, err)
		}
		w1, w2 := newLocker(t, "semaphore-2", sw, path, 1), newLocker(t, "semaphore-2", sw, path, 2)
		c1, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		got1 := make(chan error, 1)
		go func() { got1 <- acquireErr(w1)(c1) }()
		zc := f.Raw()
		waitFor(t, 5*time.Second, "w1 queued", func() bool { return len(children(zc, path+"/locks")) == 1 })
		h2 := hold(ctx, w2)
		waitFor(t, 5*time.Second, "w2 queued", func() bool { return len(children(zc, path+"/locks")) == 2 })
		if err := <-got1; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("w1: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, h.Release(ctx))
		h2.wait(t, 5*time.Second, "w2 got no lease 5 s after one was released")
	})
	t.Run("leader-observe", func(t *testing.T) {
		ctx := ctxT(t, 20*time.Second)
		path := f.Path("shared-observe")
		o1, _ := leader.New(sw, path, "o1")
		o2, _ := leader.New(sw, path, "o2")
		c1, cancel1 := context.WithCancel(ctx)
		ch1 := o1.Observe(c1)
		ch2 := o2.Observe(ctx)
		<-ch1
		<-ch2
		cancel1()
		for range ch1 {
		}
		time.Sleep(300 * time.Millisecond)
		e, _ := leader.New(sh, path, "boss")
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		defer e.Resign(context.WithoutCancel(ctx))
		observeUntil(t, ch2, 5*time.Second, l.Path(), "the remaining Observe did not see the new leader within 5 s")
	})
}

// TestSharedListingMassCancelLeavesNoWatch checks conn's "A watch
// nobody waits on any more is removed from the server" and mutex's "Nothing
// is left behind: a failed, timed-out or cancelled acquire deletes its node",
// with one session's shared listings: B holds; 24 goroutines of session A
// queue on the path (through two handles, one with WithLocalHandoff), then
// all are cancelled at once (one ctx). With A still open, no node of A's
// and no watch of A's (wchp, any path under the lock path or the lock path
// itself) may remain, and the server's watch count (mntr
// zk_watch_count) must come back to what it was with B holding alone.
// Also with the cancel made while A is disconnected (reset, reconnects
// blackholed), A reconnecting to the same session afterwards: the watches
// "do not come back on a reconnect".
func TestSharedListingMassCancelLeavesNoWatch(t *testing.T) {
	forEach(t, []string{"connected", "cancelled-while-disconnected"}, func(t *testing.T, f *fixture, name string) {
		massCancel(t, f, name == "cancelled-while-disconnected")
	})
}

func massCancel(t *testing.T, f *fixture, cut bool) {
	ctx := ctxT(t, 25*time.Second)
	path := f.Path("mass/lock")
	bys := f.Raw()
	px, sA := f.ProxiedSession(conn.WithSessionTimeout(8 * time.Second))
	b, m1, m2 := f.heldAgainst(ctx, sA, path) // B, another session, holds
	watchCount := func() string {
		m, err := f.Mntr(ctx, 0)
		require.NoError(t, err)
		return m["zk_watch_count"]
	}
	base := watchCount()
	actx, cancel := context.WithCancel(ctx)
	const n = 24
	errs := make(chan error, n)
	wg := spawn(n, func(i int) {
		_, err := [2]*mutex.InterProcessMutex{m1, m2}[i%2].Acquire(actx)
		errs <- err
	})
	// Every plain waiter has a node; the handoff ones share one.
	waitFor(t, 10*time.Second, "A's waiters queued", func() bool { return len(children(bys, path)) == 1+n/2+1 })
	time.Sleep(300 * time.Millisecond) // let the waiters set their watches; the check below does not rely on it
	t.Logf("watches with the queue: %s (B alone: %s)", watchCount(), base)
	if cut {
		suspend(t, px, sA)
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
	out, err := f.FourLetter(ctx, 0, "wchc")
	require.NoError(t, err)
	t.Logf("wchc after the cancel:\n%s", out)
	require.NoError(t, b.release())
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
}

// TestRevokedHolderWatchesGaugeMatchesServer: a revocable holder (with a
// label) arms Lost and Revoked; another session revokes it. At each step
// the holder's watches gauge (metrics.Hooks.Watches: "the number of watches
// the session has on the servers for its callers") equals what the server
// lists for its session (wchc), and both are 0 after its release.
func TestRevokedHolderWatchesGaugeMatchesServer(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	m := &metricsRec{}
	s := f.Session(conn.WithMetrics(m.Hooks()))
	path := f.Path("rev-watch")
	h, err := mutex.New(s, path, lock.WithRevocable())
	require.NoError(t, err)
	l, err := h.Acquire(lock.WithLabel(ctx, "job"))
	require.NoError(t, err)
	sid := epochOf(t, s).SessionID()
	match := func(when string) {
		t.Helper()
		if !eventually(3*time.Second, func() bool { return int(m.watches.Load()) == len(sessionWatches(t, f, 0, sid)) }) {
			t.Errorf("%s: gauge %d, server lists %v", when, m.watches.Load(), sessionWatches(t, f, 0, sid))
		}
	}
	_ = l.Lost()
	revoked := l.Revoked()
	match("armed")
	require.NoError(t, lock.Revoke(ctx, f.Session(), l.Path()))
	recv(t, revoked, 5*time.Second, "Revoked not closed")
	match("revoked")
	select {
	case <-l.Lost():
		t.Fatal("a revoke request made the lease lost")
	default:
	}
	require.NoError(t, h.Release(ctx))
	match("released")
	require.Zero(t, m.watches.Load(), "gauge after release")
}

// TestCheckWirePassesAndLeavesNoNode checks zktest.CheckWire's doc against
// the go-zookeeper this module pins: it "returns nil" for v1.0.4 itself,
// and "creates one ephemeral node at the namespace's root, cuts the
// connection once, and closes the session": once it returned, the node is
// gone and no session of it is left on the server.
func TestCheckWirePassesAndLeavesNoNode(t *testing.T) {
	f := newFixture(t)
	ns := f.Path("cw")
	ensure(t, f.Raw(), zkWorld, f.Root(), ns)
	require.NoError(t, zktest.CheckWire(ctxT(t, 30*time.Second), f.Servers(), conn.WithNamespace(ns)))
	if kids := children(f.Raw(), ns); len(kids) != 0 {
		t.Errorf("CheckWire returned and left %v at the namespace's root", kids)
	}
}

// TestCheckWireUnreachableIsNotAVersionVerdict: against servers that
// answer nothing (a blackholed proxy), CheckWire must keep its ctx's
// deadline and must not blame the go-zookeeper copy (an error matching
// conn.ErrZKVersion means "the copy does not keep what conn relies on";
// an unreachable server says nothing about the copy).
func TestCheckWireUnreachableIsNotAVersionVerdict(t *testing.T) {
	f := newFixture(t)
	p := f.Proxy()
	p.Blackhole()
	took, err := timed(context.Background(), time.Second, checkWire(p))
	t.Logf("CheckWire: %v after %v", err, took)
	require.Error(t, err)
	if took > 1250*time.Millisecond {
		t.Errorf("CheckWire returned %v after its 1 s deadline", took-time.Second)
	}
	if errors.Is(err, conn.ErrZKVersion) {
		t.Errorf("CheckWire blames the go-zookeeper copy for an unreachable server: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CheckWire's error does not match context.DeadlineExceeded: %v", err)
	}
}

// TestCheckWireCutMidCheckIsNotAVersionVerdict: the connection is
// blackholed after CheckWire's first few requests (a network fault during
// the check); it keeps its deadline and does not answer ErrZKVersion.
func TestCheckWireCutMidCheckIsNotAVersionVerdict(t *testing.T) {
	f := newFixture(t)
	for _, n := range []int{1, 2, 3} {
		p := f.Proxy()
		p.BlackholeAfterWrites(n)
		took, err := timed(context.Background(), 2*time.Second, checkWire(p))
		t.Logf("blackholed after write %d: CheckWire: %v after %v", n, err, took)
		if took > 2250*time.Millisecond {
			t.Errorf("n=%d: CheckWire returned %v after its 2 s deadline", n, took-2*time.Second)
		}
		if errors.Is(err, conn.ErrZKVersion) {
			t.Errorf("n=%d: CheckWire blames the go-zookeeper copy for a network fault: %v", n, err)
		}
		p.Close()
	}
}

// TestConnectKeepsDeadlineWhenUnreachable: Connect "waits, bounded by ctx
// alone": against a blackholed proxy it returns by its
// ctx's deadline (plus 250 ms) with an error matching
// context.DeadlineExceeded. CheckWire, which connects first, is held to
// the same.
func TestConnectKeepsDeadlineWhenUnreachable(t *testing.T) {
	f := newFixture(t)
	p := f.Proxy()
	p.Blackhole()
	for _, d := range []time.Duration{300 * time.Millisecond, time.Second} {
		took, err := timed(context.Background(), d, func(ctx context.Context) error {
			s, err := conn.Connect(ctx, p.Addrs(), conn.WithSessionTimeout(4*time.Second))
			if s != nil {
				_ = s.Close()
			}
			return err
		})
		t.Logf("deadline %v: Connect: %v after %v", d, err, took)
		require.Error(t, err)
		if took > d+250*time.Millisecond {
			t.Errorf("deadline %v: Connect returned %v after it", d, took-d)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("deadline %v: Connect's error does not match context.DeadlineExceeded: %v", d, err)
		}
	}
}

// checkWire is zktest.CheckWire through p (session timeout 4 s).
func checkWire(p *zktest.Proxy) func(context.Context) error {
	return func(ctx context.Context) error {
		return zktest.CheckWire(ctx, p.Addrs(), conn.WithSessionTimeout(4*time.Second))
	}
}

// TestSubscribeCloseAfterLost: Subscribe's channel "is closed after
// Closed"; Event.Err is "why it ended, for Lost and Closed:
// ErrSessionExpired, ErrSessionTimeout or ErrClosed"; Close "returns when
// the server answers or the connection is down". The standalone server is
// killed, the local timer ends the epoch (Lost), then Close: a Closed event
// with ErrClosed, the channel closed, Done closed.
func TestSubscribeCloseAfterLost(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	s := f.Session()
	ch := s.Subscribe(ctx)
	require.NoError(t, f.Kill(0))
	var seen []conn.Event
	for {
		ev, ok := within(ch, 10*time.Second)
		if !ok {
			t.Fatalf("no Lost within 10 s of the kill: %s", transitions(seen...))
		}
		seen = append(seen, ev)
		if ev.State == conn.Lost {
			if !errors.Is(ev.Err, conn.ErrSessionTimeout) {
				t.Errorf("Lost's Err = %v, want ErrSessionTimeout", ev.Err)
			}
			if ev.Epoch == nil || ev.Epoch.Err() == nil {
				t.Errorf("Lost's Epoch %v: want the ended epoch, its Err set", ev.Epoch)
			}
			break
		}
	}
	start := time.Now()
	require.NoError(t, s.Close())
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with the connection down", d)
	}
	var closed *conn.Event
	for {
		ev, ok := within(ch, 5*time.Second)
		if !ok {
			t.Fatalf("channel neither closed nor yielding 5 s after Close: %s", transitions(seen...))
		}
		if ev.State == 0 {
			break // closed
		}
		seen = append(seen, ev)
		if ev.State == conn.Closed {
			e := ev
			closed = &e
		}
	}
	if closed == nil {
		t.Fatalf("no Closed event before the channel closed: %s", transitions(seen...))
	}
	if !errors.Is(closed.Err, conn.ErrClosed) {
		t.Errorf("Closed's Err = %v, want ErrClosed (%s)", closed.Err, transitions(seen...))
	}
	if _, ok := within(s.Done(), 3*time.Second); !ok {
		t.Errorf("Done not closed")
	}
	t.Logf("events: %s", transitions(seen...))
}

// TestSessionWriteWithLostAnswer: Session.Create "only non-sequential
// creates are retried on connection loss"; Session.Set "retried on
// connection loss only with a real version"; conn's ErrConnectionLoss: "it
// may or may not have been applied. A retried write whose retry may have
// met its own lost try's work matches it too". The answer of each write is
// lost once (the server applies it): what the caller is told must not say
// that the write failed when it was applied by this very call.
func TestSessionWriteWithLostAnswer(t *testing.T) {
	f, ctx := setUp(t, 40*time.Second)
	zc := f.Raw()
	root := f.Path("lost-answer")
	f.Register(root, nil)
	// The last-heard timer: no sync that could take the armed cut.
	px, s := f.ProxiedSession(conn.WithLastHeardTimer())
	// armed arms the lost answer once the session is connected again (a
	// reconnect's handshake would take the cut instead).
	armed := func(t *testing.T) {
		t.Helper()
		waitFor(t, 10*time.Second, "connected", func() bool {
			st := s.State()
			return st == conn.Connected || st == conn.Reconnected
		})
		_, _, err := s.Exists(ctx, root)
		require.NoError(t, err)
		px.CutAfterNextWrite()
	}
	t.Run("create", func(t *testing.T) {
		p := root + "/created"
		armed(t)
		got, err := s.Create(ctx, p, []byte("x"), 0, zkWorld)
		t.Logf("Create: %q, %v; node exists: %v", got, err, exists(zc, p))
		require.True(t, exists(zc, p), "the lost create was applied")
		if err != nil && !(errors.Is(err, conn.ErrConnectionLoss) && errors.Is(err, zk.ErrNodeExists)) {
			t.Errorf("Create applied its create (the node is there, made by this call) but returned %v, which neither is nil nor matches ErrConnectionLoss and zk.ErrNodeExists", err)
		}
	})
	t.Run("set-version", func(t *testing.T) {
		p := root + "/set"
		_, err := zc.Create(p, []byte("0"), 0, zkWorld)
		require.NoError(t, err)
		armed(t)
		st, err := s.Set(ctx, p, []byte("1"), 0)
		data := f.Data(p)
		t.Logf("Set(version 0): %v, %v; data now %q", st, err, data)
		require.Equal(t, "1", string(data), "the lost set was applied")
		if err != nil && !errors.Is(err, conn.ErrConnectionLoss) {
			t.Errorf("Set applied its write (data %q) but returned %v, which neither is nil nor matches ErrConnectionLoss: a compare-and-set caller takes it as refused and reads and writes again", data, err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		p := root + "/deleted"
		_, err := zc.Create(p, nil, 0, zkWorld)
		require.NoError(t, err)
		armed(t)
		err = s.Delete(ctx, p, -1)
		t.Logf("Delete: %v; node exists: %v", err, exists(zc, p))
		require.False(t, exists(zc, p), "the lost delete was applied")
		if err != nil && !(errors.Is(err, conn.ErrConnectionLoss) && errors.Is(err, zk.ErrNoNode)) {
			t.Errorf("Delete applied its delete but returned %v, which neither is nil nor matches ErrConnectionLoss and zk.ErrNoNode", err)
		}
	})
	t.Run("set-any", func(t *testing.T) {
		p := root + "/set-any"
		_, err := zc.Create(p, []byte("0"), 0, zkWorld)
		require.NoError(t, err)
		armed(t)
		_, err = s.Set(ctx, p, []byte("1"), -1)
		t.Logf("Set(-1): %v; data now %q", err, f.Data(p))
		if err != nil && !errors.Is(err, conn.ErrConnectionLoss) {
			t.Errorf("Set(-1) with its answer lost: %v, want ErrConnectionLoss (not retried)", err)
		}
	})
	t.Run("create-seq", func(t *testing.T) {
		armed(t)
		got, err := s.Create(ctx, root+"/seq-", nil, zk.FlagSequence, zkWorld)
		t.Logf("Create(seq): %q, %v", got, err)
		if err == nil || !errors.Is(err, conn.ErrConnectionLoss) {
			t.Errorf("sequential Create with its answer lost: %q, %v, want ErrConnectionLoss", got, err)
		}
	})
}

// TestNamespaceNotInErrors: conn.WithNamespace is "a chroot that
// callers never see": paths handed back and errors name the caller's
// paths.
func TestNamespaceNotInErrors(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	ns := f.Path("ns")
	s := f.Session(conn.WithNamespace(ns))
	ensure(t, f.Raw(), zkWorld, f.Root(), ns)
	p, err := s.Create(ctx, "/seq-", nil, zk.FlagSequence, zkWorld)
	require.NoError(t, err)
	t.Logf("create returned %q", p)
	if strings.HasPrefix(p, ns) {
		t.Errorf("Create returned the namespaced path %q", p)
	}
	m, _ := mutex.New(s, "/m")
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	rs, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: "/gw-", Flags: zk.FlagSequence, Acl: zkWorld})
	require.NoError(t, err)
	for _, r := range rs {
		t.Logf("guarded create: %+v", r)
		if strings.HasPrefix(r.String, ns) {
			t.Errorf("GuardedWrite's create response names the namespaced path %q", r.String)
		}
		if ok, _, _ := s.Exists(ctx, r.String); !ok {
			t.Errorf("GuardedWrite's created path %q not found through the session", r.String)
		}
	}
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/missing", Version: -1})
	t.Logf("guarded set of a missing node: %v", err)
	_, _, err = s.Get(ctx, "/missing")
	t.Logf("get: %v", err)
	if err != nil && strings.Contains(err.Error(), ns) {
		t.Errorf("Session.Get's error names the namespaced path: %v", err)
	}
}

// TestSuspendedAsLostReleaseOtherRecipes: TestSuspendedAsLostReleaseLeavesNode
// for the recipes it leaves out (local handoff, with a local waiter
// behind; semaphore of 2; multilock; leader): after a loss by suspension
// on a session that survives, Release (Resign, ReturnLease) must still
// delete the node: another session acquires, no watch is left, the loss
// is counted once.
func TestSuspendedAsLostReleaseOtherRecipes(t *testing.T) {
	forEach(t, []string{"mutex-handoff", "semaphoremutex-handoff", "semaphore-2", "multilock", "leader"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 40*time.Second)
		rec := &metricsRec{}
		px, s := f.ProxiedSession(conn.WithSuspendedAsLost(), conn.WithMetrics(rec.Hooks()))
		path := f.Path("susp/") + recipe
		lk := newLocker(t, recipe, s, path, 0)
		sid := epochOf(t, s).SessionID()
		h := hold(ctx, lk)
		l := h.wait(t, 5*time.Second, "holder")
		lost := l.Lost()
		var local *holder
		if strings.HasSuffix(recipe, "-handoff") {
			local = hold(ctx, newLocker(t, recipe, s, path, 1))
			local.notGranted(t, 200*time.Millisecond, "local waiter granted while held")
		}
		px.Cut()
		recv(t, lost, 5*time.Second, "Lost not closed on suspension")
		waitFor(t, 10*time.Second, "reconnected", func() bool { return s.State() == conn.Reconnected })
		if got := epochOf(t, s).SessionID(); got != sid {
			t.Fatalf("session changed (%x -> %x): the cut was too long", sid, got)
		}
		err := h.release()
		t.Logf("release after suspended loss: %v", err)
		if local != nil {
			l2 := local.wait(t, 5*time.Second, "local waiter")
			t.Logf("local waiter: %s (holder's %s), err %v", l2.Path(), l.Path(), l2.Err())
			require.NoError(t, local.release())
		}
		olk := newLocker(t, strings.TrimSuffix(recipe, "-handoff"), f.Session(), path, 2)
		if _, err := timed(ctx, 6*time.Second, acquireErr(olk)); err != nil {
			t.Errorf("another session could not acquire after the release (nodes %v): %v", ephemeralsUnder(f.Raw(), f.Path("susp")), err)
		} else {
			_ = olk.Release(context.WithoutCancel(ctx))
		}
		noWatchesOf(t, f, sid, 3*time.Second, "the session")
		rec.gaugeDrains(t, 3*time.Second)
		want := 1
		if recipe == "multilock" {
			want = 2
		}
		rec.expect(t, want, metrics.LockLost, "", metrics.CauseSuspended, "losses with cause suspended")
		t.Logf("events %s", rec.dump())
	})
}

// TestConnectRefusesAnOptionGivenTwice: docs/api.md, "Bad input of any kind
// is one error", and conn.Option: Connect refuses an option given twice
// with conn.ErrInvalidArgument naming it, as every recipe refuses a
// repeated lock.Option, instead of letting the last one win (two
// WithMetrics: one adapter silently dropped). The same Option value twice
// is refused too; WithDigestAuth adds one identity per user, so two users
// connect and the same user twice is refused.
func TestConnectRefusesAnOptionGivenTwice(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	var hooksA, hooksB atomic.Int64
	a := metrics.Hooks{State: func(metrics.Transition) { hooksA.Add(1) }}
	b := metrics.Hooks{State: func(metrics.Transition) { hooksB.Add(1) }}
	acl := zk.WorldACL(zk.PermAll)
	for name, opts := range map[string][]conn.Option{
		"WithMetrics":         {conn.WithMetrics(a), conn.WithMetrics(b)},
		"WithSessionTimeout":  {conn.WithSessionTimeout(4 * time.Second), conn.WithSessionTimeout(9 * time.Second)},
		"WithNamespace":       {conn.WithNamespace("/a"), conn.WithNamespace("/b")},
		"WithLogger":          {conn.WithLogger(zap.NewNop()), conn.WithLogger(zap.NewNop())},
		"WithDialer":          {conn.WithDialer(net.DialTimeout), conn.WithDialer(net.DialTimeout)},
		"WithRetry":           {conn.WithRetry(time.Millisecond, time.Second, 0), conn.WithRetry(time.Millisecond, time.Second, 1)},
		"WithACL":             {conn.WithACL(acl), conn.WithACL(acl)},
		"WithSuspendedAsLost": {conn.WithSuspendedAsLost(), conn.WithSuspendedAsLost()},
		"WithLastHeardTimer":  {conn.WithLastHeardTimer(), conn.WithLastHeardTimer()},
		"WithPatchedZK":       {conn.WithPatchedZK(), conn.WithPatchedZK()},
		"WithDigestAuth":      {conn.WithDigestAuth("u", "p"), conn.WithDigestAuth("u", "q")},
		"one value twice":     func() []conn.Option { o := conn.WithMetrics(a); return []conn.Option{o, o} }(),
	} {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := conn.Connect(cctx, f.Servers(), opts...)
		cancel()
		if err == nil {
			_ = s.Close()
			t.Errorf("%s given twice: Connect accepted it", name)
			continue
		}
		if !errors.Is(err, conn.ErrInvalidArgument) || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%s given twice: %v, want conn.ErrInvalidArgument saying it was given twice", name, err)
		}
	}
	if n := hooksA.Load() + hooksB.Load(); n != 0 {
		t.Errorf("a refused Connect reported %d transitions", n)
	}
	s := f.Session(conn.WithDigestAuth("u", "p"), conn.WithDigestAuth("v", "p"))
	require.Equal(t, conn.Connected, s.State(), "two users' credentials")
}

// TestSessionReadWithLostAnswerSaysNoApply: a read whose answer is lost
// with the connection (retries off) fails matching conn.ErrConnectionLoss,
// but, unlike a write, it applies nothing: its error must not say "the
// request may or may not have been applied".
func TestSessionReadWithLostAnswerSaysNoApply(t *testing.T) {
	f, ctx := setUp(t, 40*time.Second)
	p := f.Path("lost-read")
	f.Register(p, []byte("x"))
	px, s := f.ProxiedSession(conn.WithLastHeardTimer(), oneAttempt(20*time.Millisecond))
	for name, read := range map[string]func() error{
		"get":      func() error { _, _, err := s.Get(ctx, p); return err },
		"children": func() error { _, _, err := s.Children(ctx, p); return err },
		"exists":   func() error { _, _, err := s.Exists(ctx, p); return err },
	} {
		waitFor(t, 10*time.Second, "connected", func() bool {
			st := s.State()
			return st == conn.Connected || st == conn.Reconnected
		})
		_, _, err := s.Exists(ctx, p)
		require.NoError(t, err)
		px.CutAfterNextWrite()
		err = read()
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, conn.ErrConnectionLoss) {
			t.Errorf("%s with its answer lost: %v, want conn.ErrConnectionLoss", name, err)
			continue
		}
		if strings.Contains(err.Error(), "applied") || !strings.Contains(err.Error(), "conn: "+name+" "+p+": ") {
			t.Errorf("%s with its answer lost: %q, want the read and its path, and nothing of applying", name, err)
		}
	}
}
