package attack_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The session's availability promises (docs/safety.md, "Fault by fault",
// "What a fault costs", "The window"; docs/design.md's go-zookeeper
// facts): a silent server is left for another after 4T/12, a connect
// request is given up after T/n, silent servers are tried last, at most 64
// requests are in flight, and a given-up session is closed on the server
// as soon as a server answers.

// followerIdx returns the two followers of f's ensemble.
func followerIdx(t *testing.T, f *fixture) (ld int, fs [2]int) {
	t.Helper()
	require.NoError(t, f.WaitServing(context.Background()))
	ld, err := f.Leader()
	require.NoError(t, err)
	return ld, [2]int{(ld + 1) % 3, (ld + 2) % 3}
}

// stateLog collects a session's transitions from Subscribe.
type stateLog struct {
	mu  sync.Mutex
	evs []conn.Event
}

func logStates(ctx context.Context, s *conn.Session) *stateLog {
	l := &stateLog{}
	ch := s.Subscribe(ctx)
	go func() {
		for ev := range ch {
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			l.mu.Unlock()
		}
	}()
	return l
}

// first returns the first event of state st, if any.
func (l *stateLog) first(st conn.State) (conn.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.evs {
		if ev.State == st {
			return ev, true
		}
	}
	return conn.Event{}, false
}

func (l *stateLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ev := range l.evs {
		fmt.Fprintf(&b, "%s@%s ", ev.State, ev.Time.Format("15:04:05.000"))
		if ev.Err != nil {
			fmt.Fprintf(&b, "(%v) ", ev.Err)
		}
	}
	return b.String()
}

// TestFollowerPauseOnModestLatencyLink attacks "follower paused: kept"
// (safety.md, "Fault by fault") on a link whose round trip (400 ms) is a
// fifth of T/2, which "The window" counts as kept without a fault: the
// follower the session is on is frozen past T; the session must move to
// the other follower and keep its epoch and its lock.
func TestFollowerPauseOnModestLatencyLink(t *testing.T) {
	const T = 4 * time.Second
	const d = 200 * time.Millisecond
	f := newFixture(t, zktest.WithServers(3))
	_, fs := followerIdx(t, f)
	px := f.Proxy()
	px.SetLatency(d)
	s := f.SessionAt([]string{px.Addrs()[fs[0]], px.Addrs()[fs[1]]}, conn.WithSessionTimeout(T))
	ctx := ctxT(t, 60*time.Second)
	log := logStates(ctx, s)
	m, err := mutex.New(s, f.Path("lat/lock"))
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	// Control: the link alone keeps the epoch for 2T.
	quiet(t, l.Lost(), 2*T, "control: lease lost on the %v-per-chunk link without a fault: %v (%s)", d, l.Err(), log)
	sid := l.Epoch().SessionID()
	on := -1
	waitFor(t, 5*time.Second, "the session's server", func() bool { on = serverOf(f, sid); return on >= 0 })
	paused := time.Now()
	require.NoError(t, f.Pause(on))
	defer func() { _ = f.Resume(on) }()
	select {
	case <-l.Lost():
		t.Fatalf("follower %d paused, %v-per-chunk link (round trip %v, T/2 = %v): lease lost %v after the pause (%v), "+
			"while the server keeps the session for T = %v; safety.md, \"Fault by fault\": \"server process paused ... "+
			"follower paused: **kept**\"; \"The window\" counts only \"a link whose round trip exceeds about T/2\" as a cost. states: %s",
			on, d, 2*d, T/2, time.Since(paused).Round(time.Millisecond), l.Err(), T, log)
	case <-time.After(T + time.Second):
	}
	_, ok := log.first(conn.Reconnected)
	require.True(t, ok, "no Reconnected after the pause: %s", log)
	require.NoError(t, m.Release(ctx))
}

// nameDialer maps addresses only it knows (a port nothing listens on) to
// real ones, as a service-discovery, tunnel or TLS dialer does; it counts
// its dials.
type nameDialer struct {
	mu    sync.Mutex
	names map[string]string
	dials int
}

func (n *nameDialer) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	n.mu.Lock()
	to, ok := n.names[address]
	n.dials++
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("nameDialer: unknown address %q", address)
	}
	return net.DialTimeout(network, to, timeout)
}

// TestGivenUpSessionClosedThroughTheDialer attacks design.md's "The client
// closes that session itself: a connection of its own attaches to it"
// with WithDialer ("how TCP connections are made, for TLS or a proxy"): the
// server address is one only the dialer can reach (port 1, mapped). After a cut long enough for
// the quorum timer, the given-up session's node must go within a second of
// the heal, not at the server's expiry.
func TestGivenUpSessionClosedThroughTheDialer(t *testing.T) {
	const T = 10 * time.Second
	f, ctx := setUp(t, 60*time.Second)
	px := f.Proxy()
	nd := &nameDialer{names: map[string]string{"127.0.0.1:1": px.Addrs()[0]}}
	s := f.SessionAt([]string{"127.0.0.1:1"}, conn.WithSessionTimeout(T), conn.WithDialer(nd.Dial))
	log := logStates(ctx, s)
	path := f.Path("dialer/lock")
	m, err := mutex.New(s, path)
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	zc := f.Raw()
	ok, _, watch, err := zc.ExistsW(l.Path())
	require.NoError(t, err)
	require.True(t, ok)
	cut := time.Now()
	px.Blackhole()
	select {
	case <-l.Lost():
	case <-time.After(T):
		t.Fatalf("lease not lost %v after the cut: %s", T, log)
	}
	lostAt := time.Since(cut)
	px.Heal()
	healed := time.Now()
	select {
	case ev := <-watch:
		require.Equal(t, zk.EventNodeDeleted, ev.Type)
		took := time.Since(healed)
		t.Logf("lost %v after the cut; node deleted %v after the heal", lostAt.Round(time.Millisecond), took.Round(time.Millisecond))
		if took > 1500*time.Millisecond {
			t.Fatalf("the given-up session's node %s went %v after the heal (%v after the cut: the server's expiry, T = %v), "+
				"not when the server first answered; design.md: \"The client closes that session itself (givenup.go): a connection "+
				"of its own attaches to it with its id and password and sends CloseSession\"; safety.md: \"The client closes the old "+
				"session on the server as soon as any server answers\" (WithDialer: %d dials)",
				l.Path(), took.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond), T, nd.dials)
		}
	case <-time.After(2 * T):
		t.Fatalf("the given-up session's node %s never went", l.Path())
	}
}

var _ = runtime.NumGoroutine

// libGoroutines counts the goroutines whose stack runs code of conn,
// the recipes' internals or go-zookeeper, and returns one such stack.
func libGoroutines() (int, string) {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n, sample := 0, ""
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/go-zookeeper/zk") || strings.Contains(g, "zkrecipes/zkrecipes/conn") ||
			strings.Contains(g, "zkrecipes/zkrecipes/internal") {
			n++
			if sample == "" {
				sample = g
			}
		}
	}
	return n, sample
}

// settlesTo waits up to d for libGoroutines to drop to base or less.
func settlesTo(base int, d time.Duration) (int, string) {
	deadline := time.Now().Add(d)
	for {
		n, g := libGoroutines()
		if n <= base || time.Now().After(deadline) {
			return n, g
		}
		time.Sleep(50 * time.Millisecond) // polling the goroutine count
	}
}

// TestCloseAfterGiveUpStillClosesServerSession attacks "The client closes
// the old session on the server as soon as any server answers" with
// Session.Close while the path is still cut: the given-up session's node
// must go once the path is back, not at the server's expiry, and Close
// must not leave the closer's goroutines behind.
func TestCloseAfterGiveUpStillClosesServerSession(t *testing.T) {
	const T = 10 * time.Second
	f, ctx := setUp(t, 60*time.Second)
	zc := f.Raw()
	base, _ := libGoroutines()
	px := f.Proxy()
	s, err := conn.Connect(ctx, px.Addrs(), conn.WithSessionTimeout(T))
	require.NoError(t, err)
	m, err := mutex.New(s, f.Path("close-gu/lock"))
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	ok, _, watch, err := zc.ExistsW(l.Path())
	require.NoError(t, err)
	require.True(t, ok)
	cut := time.Now()
	px.Blackhole()
	recv(t, l.Lost(), T, "lease not lost %v after the cut", T)
	closeStart := time.Now()
	require.NoError(t, s.Close())
	tookClose := time.Since(closeStart)
	recv(t, s.Done(), 5*time.Second, "Done not closed 5 s after Close")
	px.Heal()
	healed := time.Now()
	select {
	case ev := <-watch:
		require.Equal(t, zk.EventNodeDeleted, ev.Type)
		took := time.Since(healed)
		t.Logf("lost %v after the cut; Close took %v; node deleted %v after the heal",
			closeStart.Sub(cut).Round(time.Millisecond), tookClose.Round(time.Millisecond), took.Round(time.Millisecond))
		if took > 1500*time.Millisecond {
			t.Errorf("the given-up session's node %s went %v after the heal (%v after the cut, the server's expiry at T = %v) "+
				"because Session.Close came before the heal; safety.md, \"What a fault costs\": \"The client closes the old session "+
				"on the server as soon as any server answers, so the old places do not block the queue\"",
				l.Path(), took.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond), T)
		}
	case <-time.After(2 * T):
		t.Fatalf("the given-up session's node %s never went", l.Path())
	}
	if n, g := settlesTo(base, 5*time.Second); n > base {
		t.Errorf("%d goroutines of conn/go-zookeeper left 5 s after Close and the node's deletion (%d before Connect); e.g.:\n%s", n, base, g)
	}
}

// TestConnectDeadlineWhileEveryServerPaused attacks Connect's "waits,
// bounded by ctx" and "a connect request unanswered for T/n ... is given
// up" with every server of the ensemble frozen (connections accepted by
// the kernel, never answered): Connect must return by its deadline, with
// context.DeadlineExceeded, and leave no goroutine behind.
func TestConnectDeadlineWhileEveryServerPaused(t *testing.T) {
	f := newFixture(t, zktest.WithServers(3))
	require.NoError(t, f.WaitServing(context.Background()))
	base, _ := libGoroutines()
	for i := range 3 {
		require.NoError(t, f.Pause(i))
	}
	defer func() {
		for i := range 3 {
			_ = f.Resume(i)
		}
	}()
	for _, d := range []time.Duration{700 * time.Millisecond, 3 * time.Second} {
		took, err := timed(context.Background(), d, func(ctx context.Context) error {
			s, err := conn.Connect(ctx, f.Servers(), conn.WithSessionTimeout(4*time.Second))
			if s != nil {
				_ = s.Close()
			}
			return err
		})
		t.Logf("deadline %v: %v after %v", d, err, took.Round(time.Millisecond))
		if took > d+250*time.Millisecond {
			t.Errorf("deadline %v: Connect returned %v after it with every server paused (Connect: \"waits, bounded by ctx\")", d, took-d)
		}
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	if n, g := settlesTo(base, 3*time.Second); n > base {
		t.Errorf("%d goroutines of conn/go-zookeeper left 3 s after the failed Connects (%d before); design.md: \"go-zookeeper's "+
			"goroutines end at once, except its Close, which may wait on in the background for up to a second\"; e.g.:\n%s", n, base, g)
	}
}
