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
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The session's availability promises (docs/safety.md, "Fault by fault",
// "What a fault costs", "The window"; docs/design.md's go-zookeeper
// facts): a silent server is left for another in time, a connect
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

// TestCloseAfterGiveUpLeavesSessionToServer: Session.Close while the path
// is still cut stops the closing of the session the local timer gave up
// (Close's doc says so): its node goes at the server's expiry, not later,
// and Close leaves no goroutine of the closer behind.
func TestCloseAfterGiveUpLeavesSessionToServer(t *testing.T) {
	const T = 10 * time.Second
	f, ctx := setUp(t, 60*time.Second)
	zc := f.Raw()
	_, _, err := zc.Exists("/") // the raw connection's goroutines run before the count
	require.NoError(t, err)
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
		if gone := time.Since(cut); gone > T+3*time.Second {
			t.Errorf("the given-up session's node %s went %v after the cut, later than the server's expiry at T = %v",
				l.Path(), gone.Round(time.Millisecond), T)
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

// TestLeaderPauseElectionWithinMarginKeepsEverything attacks the implied
// other side of "the leader paused, election longer than 7T/12: lease lost"
// (safety.md, "What a fault costs") and "leader killed, election within
// 7T/12: keeps its lease": the leader is frozen for 8 s with T = 10 s, the
// election (about 3 s) well within 7T/12 (5.8 s). A holder on the frozen
// leader itself, a waiter and a leader-election term on other sessions must
// all survive; the waiter enters only after the release, with a greater fence.
func TestLeaderPauseElectionWithinMarginKeepsEverything(t *testing.T) {
	const T = 10 * time.Second
	f := newFixture(t, zktest.WithServers(3))
	ld, _ := followerIdx(t, f)
	ctx := ctxT(t, 90*time.Second)
	// A session on the leader itself: connect until go-zookeeper's shuffle
	// puts one there.
	var sA *conn.Session
	for i := 0; i < 12 && sA == nil; i++ {
		s, err := conn.Connect(ctx, f.Servers(), conn.WithSessionTimeout(T))
		require.NoError(t, err)
		var sid int64
		waitFor(t, 5*time.Second, "an epoch", func() bool { return s.State() == conn.Connected })
		m, _ := mutex.New(s, f.Path("probe"))
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		sid = l.Epoch().SessionID()
		require.NoError(t, m.Release(ctx))
		if serverOf(f, sid) == ld {
			sA = s
			t.Cleanup(func() { _ = s.Close() })
		} else {
			_ = s.Close()
		}
	}
	if sA == nil {
		t.Skip("no session landed on the leader in 12 tries")
	}
	sB := f.Session(conn.WithSessionTimeout(T))
	sC := f.Session(conn.WithSessionTimeout(T))
	logs := []*stateLog{logStates(ctx, sA), logStates(ctx, sB), logStates(ctx, sC)}
	path := f.Path("ldpause/lock")
	mA, _ := mutex.New(sA, path)
	mB, _ := mutex.New(sB, path)
	la, err := mA.Acquire(ctx)
	require.NoError(t, err)
	fa := fenceOf(t, ctx, la)
	b := hold(ctx, mB)
	waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(f.Raw(), path)) == 2 })
	e := electionOf(t, sC, f.Path("ldpause/election"), "c")
	leading := make(chan struct{})
	termEnded := make(chan error, 1)
	go func() {
		termEnded <- e.Run(ctx, func(fctx context.Context, _ *conn.Lease) error {
			close(leading)
			<-fctx.Done()
			return context.Cause(fctx)
		})
	}()
	recv(t, leading, 10*time.Second, "C never led")

	paused := time.Now()
	require.NoError(t, f.Pause(ld))
	resumed := false
	defer func() {
		if !resumed {
			_ = f.Resume(ld)
		}
	}()
	var elected time.Duration
	for elected == 0 && time.Since(paused) < 20*time.Second {
		if i, err := f.Leader(); err == nil && i != ld {
			elected = time.Since(paused)
		}
		time.Sleep(50 * time.Millisecond) // polling the servers' mode
	}
	require.NotZero(t, elected, "no new leader")
	if rest := 8*time.Second - time.Since(paused); rest > 0 {
		time.Sleep(rest) // the fault's length
	}
	require.NoError(t, f.Resume(ld))
	resumed = true
	t.Logf("leader %d paused 8 s; new leader after %v; A: %s; B: %s; C: %s", ld, elected.Round(time.Millisecond), logs[0], logs[1], logs[2])
	for i, lg := range logs {
		if ev, lost := lg.first(conn.Lost); lost {
			t.Errorf("session %c lost its epoch %v after the leader's pause (%v), the election having taken %v < 7T/12 = %v; "+
				"safety.md: \"leader killed, election within 7T/12: keeps its lease\" and \"server process paused ... a connection whose server "+
				"has gone silent is left for the next server\"",
				"ABC"[i], ev.Time.Sub(paused).Round(time.Millisecond), ev.Err, elected.Round(time.Millisecond), 7*T/12)
		}
	}
	if la.Err() != nil {
		t.Errorf("holder's lease lost: %v", la.Err())
	}
	select {
	case err := <-termEnded:
		t.Errorf("C's term ended: %v", err)
	default:
	}
	b.notGranted(t, 100*time.Millisecond, "B granted (or failed) while A holds")
	if t.Failed() {
		return
	}
	require.NoError(t, mA.Release(ctx))
	lb := b.wait(t, 10*time.Second, "B")
	if fb := fenceOf(t, ctx, lb); fb.Compare(fa) <= 0 {
		t.Errorf("B's fence %v not above A's %v", fb, fa)
	}
}

// TestFollowerPauseUnderOwnBurst attacks "at most 64 requests of a session
// are in flight" and "follower paused: kept" together: 1,000 waiters of one
// session (T = 4 s) are queued behind another session's holder when the
// follower it is on freezes past T. The reconnect must carry the waiters'
// watches and the retried requests without the epoch ending; the waiters
// keep their places; 200 readers loop meanwhile.
func TestFollowerPauseUnderOwnBurst(t *testing.T) {
	const T = 4 * time.Second
	const waiters = 1000
	f := newFixture(t, zktest.WithServers(3))
	_, fs := followerIdx(t, f)
	ctx := ctxT(t, 120*time.Second)
	srv := f.Servers()
	s := f.SessionAt([]string{srv[fs[0]], srv[fs[1]]}, conn.WithSessionTimeout(T))
	log := logStates(ctx, s)
	path := f.Path("burst/lock")
	hb := f.mutexHeld(ctx, path)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, waiters)
	wg := spawn(waiters, func(int) {
		m, err := mutex.New(s, path)
		if err != nil {
			errs <- err
			return
		}
		if _, err := m.Acquire(wctx); err != nil && wctx.Err() == nil {
			errs <- err
		}
	})
	waitFor(t, 90*time.Second, "every waiter queued", func() bool { return len(children(f.Raw(), path)) == waiters+1 })
	ep, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)
	on := serverOf(f, ep.SessionID())
	require.True(t, on == fs[0] || on == fs[1], "the waiters' session on a follower")
	// And 200 goroutines reading in a loop, so that requests are in flight
	// and retried across the pause.
	stopReads := make(chan struct{})
	reads := spawn(200, func(int) {
		for {
			select {
			case <-stopReads:
				return
			default:
			}
			_, _, _ = s.Get(wctx, path)
		}
	})
	paused := time.Now()
	require.NoError(t, f.Pause(on))
	defer func() { _ = f.Resume(on) }()
	time.Sleep(T + time.Second) // the fault's length
	require.NoError(t, f.Resume(on))
	close(stopReads)
	if !doneWithin(reads, 30*time.Second) {
		t.Fatal("readers did not stop 30 s after the pause")
	}
	if ev, lost := log.first(conn.Lost); lost {
		t.Fatalf("with %d waiters queued and 200 readers, follower %d paused: epoch lost %v after the pause (%v) while the server keeps the session "+
			"(T = %v); safety.md: \"follower paused: **kept**\", \"at most 64 requests of a session are in flight, so the quorum timer's sync "+
			"never waits behind thousands\"; states: %s", waiters, on, ev.Time.Sub(paused).Round(time.Millisecond), ev.Err, T, log)
	}
	if _, ok := log.first(conn.Reconnected); !ok {
		t.Fatalf("no Reconnected: %s", log)
	}
	select {
	case err := <-errs:
		t.Fatalf("a waiter failed across the pause: %v", err)
	default:
	}
	if n := len(children(f.Raw(), path)); n != waiters+1 {
		t.Errorf("%d nodes in the queue after the pause, want %d", n, waiters+1)
	}
	require.NoError(t, hb.release())
	waitFor(t, 30*time.Second, "a waiter granted", func() bool {
		kids := children(f.Raw(), path)
		return len(kids) == waiters
	})
	cancel()
	if !doneWithin(wg, 60*time.Second) {
		t.Fatal("waiters did not return 60 s after cancel")
	}
	t.Logf("states: %s", log)
}

// transRec records a session's metrics: transitions with their session,
// lock events, leader terms.
type transRec struct {
	mu     sync.Mutex
	states []metrics.Transition
	locks  []metrics.Lock
	terms  []metrics.Leader
}

func (r *transRec) hooks() metrics.Hooks {
	return metrics.Hooks{
		State:  func(tr metrics.Transition) { r.mu.Lock(); r.states = append(r.states, tr); r.mu.Unlock() },
		Lock:   func(l metrics.Lock) { r.mu.Lock(); r.locks = append(r.locks, l); r.mu.Unlock() },
		Leader: func(l metrics.Leader) { r.mu.Lock(); r.terms = append(r.terms, l); r.mu.Unlock() },
	}
}

func (r *transRec) count(ev, recipe, cause string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.locks {
		if l.Event == ev && (recipe == "" || l.Recipe == recipe) && (cause == "" || l.Cause == cause) {
			n++
		}
	}
	return n
}

func (r *transRec) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range r.states {
		fmt.Fprintf(&b, "%s(0x%x) ", s.State, s.SessionID)
	}
	b.WriteString("| ")
	for _, l := range r.locks {
		fmt.Fprintf(&b, "%s/%s/%s%s ", l.Event, l.Recipe, l.Outcome, l.Cause)
	}
	fmt.Fprintf(&b, "| terms %d", len(r.terms))
	return b.String()
}

// TestGivenUpSemaphoreLeasesCountedAndClosed attacks metrics.Lock's "A
// grant ends in one LockHold or one LockLost, never both", LockLost's
// "once" and "The client closes the old session on the server as soon as
// any server answers", with several kinds of grant in one session (two
// leases of a semaphore, a revocable mutex, a leader term) when the quorum
// timer gives the session up: one LockLost (local_timer) per grant, no
// LockHold at the late release, one term end, the State hook as
// Subscribe, and every node of the old
// session gone within a second and a half of the heal.
func TestGivenUpSemaphoreLeasesCountedAndClosed(t *testing.T) {
	const T = 8 * time.Second
	f, ctx := setUp(t, 60*time.Second)
	zc := f.Raw()
	rec := &transRec{}
	px := f.Proxy()
	s := f.SessionAt(px.Addrs(), conn.WithSessionTimeout(T), conn.WithMetrics(rec.hooks()))
	log := logStates(ctx, s)
	root := f.Path("gu-sem")
	sem, err := semaphoremutex.NewSemaphore(s, root+"/sem", 3)
	require.NoError(t, err)
	l1, err := sem.Acquire(ctx)
	require.NoError(t, err)
	l2, err := sem.Acquire(ctx)
	require.NoError(t, err)
	m, err := mutex.New(s, root+"/mutex", lock.WithRevocable())
	require.NoError(t, err)
	lm, err := m.Acquire(ctx)
	require.NoError(t, err)
	e := electionOf(t, s, root+"/election", "me")
	leading := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctx, func(fctx context.Context, _ *conn.Lease) error { close(leading); <-fctx.Done(); return nil })
	}()
	recv(t, leading, 10*time.Second, "never led")
	for _, l := range []*conn.Lease{l1, l2, lm} {
		_ = l.Lost() // watched from the grant on
	}
	sid := l1.Epoch().SessionID()
	require.Equal(t, 4, countNodes(zc, root), "nodes held")
	cut := time.Now()
	px.Blackhole()
	for _, l := range []*conn.Lease{l1, l2, lm} {
		recv(t, l.Lost(), T, "a lease not lost %v after the cut", T)
	}
	recv(t, ran, 5*time.Second, "Run did not return after the epoch ended")
	px.Heal()
	healed := time.Now()
	waitFor(t, 2*T, "the old session's nodes gone", func() bool { return countNodes(zc, root) == 0 })
	gone := time.Since(healed)
	t.Logf("lost %v after the cut; nodes gone %v after the heal", time.Since(cut)-gone, gone.Round(time.Millisecond))
	if gone > 1500*time.Millisecond {
		t.Errorf("the given-up session 0x%x's nodes went %v after the heal; safety.md: \"The client closes the old session on the "+
			"server as soon as any server answers\"", sid, gone.Round(time.Millisecond))
	}
	_ = sem.ReturnLease(ctx, l1)
	_ = sem.ReturnLease(ctx, l2)
	_ = m.Release(ctx)
	waitFor(t, 10*time.Second, "the new epoch", func() bool { return s.State() == conn.Connected })
	if n := rec.count(metrics.LockLost, "semaphore", metrics.CauseLocalTimer); n != 2 {
		t.Errorf("semaphore: %d LockLost(local_timer) for two leases the local timer ended, want 2: %s", n, rec)
	}
	if n := rec.count(metrics.LockLost, "mutex", metrics.CauseLocalTimer); n != 1 {
		t.Errorf("mutex: %d LockLost(local_timer), want 1: %s", n, rec)
	}
	if n := rec.count(metrics.LockLost, "leader", ""); n != 1 {
		t.Errorf("leader: %d LockLost, want 1: %s", n, rec)
	}
	if n := rec.count(metrics.LockLost, "", ""); n != 4 {
		t.Errorf("%d LockLost in all, want 4 (\"LockLost: a held lease was found lost, with a Cause, once\"): %s", n, rec)
	}
	if n := rec.count(metrics.LockHold, "", ""); n != 0 {
		t.Errorf("%d LockHold for grants already lost (\"A grant ends in one LockHold or one LockLost, never both\"): %s", n, rec)
	}
	rec.mu.Lock()
	terms := len(rec.terms)
	var lostSID int64
	var order []string
	for _, st := range rec.states {
		order = append(order, st.State)
		if st.State == "Lost" {
			lostSID = st.SessionID
		}
	}
	rec.mu.Unlock()
	if terms != 2 {
		t.Errorf("%d leader term events, want a start and an end: %s", terms, rec)
	}
	if lostSID != sid {
		t.Errorf("Transition Lost reports session 0x%x, want the ended epoch's 0x%x (\"for Lost and Closed, the one ended\")", lostSID, sid)
	}
	var subscribed []string
	log.mu.Lock()
	for _, ev := range log.evs {
		subscribed = append(subscribed, ev.State.String())
	}
	log.mu.Unlock()
	if got, want := strings.Join(order, ","), "Connected,"+strings.Join(subscribed, ","); got != want {
		t.Errorf("State hook saw %s, Subscribe %s", got, want)
	}
}

// TestOwnWriteBurstKeepsEpoch attacks "at most 64 requests of a session
// are in flight ... so the quorum timer's sync never waits behind
// thousands" (safety.md, "What a fault costs") with writes, not waits: 128
// goroutines of one session (T = 4 s) set 100 KB nodes as fast as they
// can for 3T, no fault. The server keeps the session throughout; the
// epoch must live too.
func TestOwnWriteBurstKeepsEpoch(t *testing.T) {
	const T = 4 * time.Second
	f, ctx := setUp(t, 90*time.Second)
	s := f.Session(conn.WithSessionTimeout(T))
	log := logStates(ctx, s)
	root := f.Path("wburst")
	f.Register(root, nil)
	data := make([]byte, 100<<10)
	for i := range 64 {
		_, err := s.Create(ctx, fmt.Sprintf("%s/n%02d", root, i), nil, 0, zkWorld)
		require.NoError(t, err)
	}
	ep, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)
	stop := time.Now().Add(3 * T)
	var mu sync.Mutex
	writes, fails := 0, 0
	var firstErr error
	wg := spawn(128, func(i int) {
		for time.Now().Before(stop) && ep.Err() == nil {
			_, err := s.Set(ctx, fmt.Sprintf("%s/n%02d", root, i%64), data, -1)
			mu.Lock()
			if err != nil {
				fails++
				if firstErr == nil {
					firstErr = err
				}
			} else {
				writes++
			}
			mu.Unlock()
		}
	})
	if !doneWithin(wg, 60*time.Second) {
		t.Fatal("writers did not stop")
	}
	t.Logf("%d writes of 100 KB in 3T (%d failed: %v); states: %s", writes, fails, firstErr, log)
	if ev, lost := log.first(conn.Lost); lost {
		t.Fatalf("the session's own burst of %d writes ended its epoch (%v) while the server kept it (no fault, the server "+
			"hears from it all along); safety.md: \"at most 64 requests of a session are in flight, so the quorum timer's sync never "+
			"waits behind thousands\" (no epoch ends); states: %s", writes, ev.Err, log)
	}
}

// TestFollowerPauseLastHeardTimerKeepsSession: with conn.WithLastHeardTimer
// nothing is sent to prove the server alive, so a frozen follower is left
// only at go-zookeeper's read timeout, 2T/3 (safety.md, "Fault by fault");
// the session must still move to the other follower and keep its lease.
func TestFollowerPauseLastHeardTimerKeepsSession(t *testing.T) {
	const T = 4 * time.Second
	f := newFixture(t, zktest.WithServers(3))
	_, fs := followerIdx(t, f)
	srv := f.Servers()
	s := f.SessionAt([]string{srv[fs[0]], srv[fs[1]]}, conn.WithSessionTimeout(T), conn.WithLastHeardTimer())
	ctx := ctxT(t, 60*time.Second)
	log := logStates(ctx, s)
	m, _ := mutex.New(s, f.Path("lh/lock"))
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	on := serverOf(f, l.Epoch().SessionID())
	require.True(t, on == fs[0] || on == fs[1])
	paused := time.Now()
	require.NoError(t, f.Pause(on))
	defer func() { _ = f.Resume(on) }()
	waitFor(t, 2*T, "Reconnected", func() bool { _, ok := log.first(conn.Reconnected); return ok })
	ev, _ := log.first(conn.Suspended)
	took := ev.Time.Sub(paused)
	t.Logf("last-heard timer: Suspended %v after the pause; states: %s", took.Round(time.Millisecond), log)
	if took > 2*T/3+time.Second {
		t.Errorf("with WithLastHeardTimer the frozen follower was left %v after the pause, later than go-zookeeper's read timeout (2T/3 = %v)",
			took.Round(time.Millisecond), 2*T/3)
	}
	require.NoError(t, l.Err(), "lease lost")
}

// TestConnectWhileFollowerPausedLastHeardTimer attacks "a connect request
// unanswered for T/n (n addresses, at least 500 ms) is given up" with
// conn.WithLastHeardTimer: Connect to [frozen follower, live follower]
// must succeed within T, each of 6 tries.
func TestConnectWhileFollowerPausedLastHeardTimer(t *testing.T) {
	const T = 3 * time.Second
	f := newFixture(t, zktest.WithServers(3))
	_, fs := followerIdx(t, f)
	require.NoError(t, f.Pause(fs[0]))
	defer func() { _ = f.Resume(fs[0]) }()
	for i := range 6 {
		took, err := timed(context.Background(), T, func(ctx context.Context) error {
			s, err := conn.Connect(ctx, []string{f.Servers()[fs[0]], f.Servers()[fs[1]]}, conn.WithSessionTimeout(T), conn.WithLastHeardTimer())
			if s != nil {
				_ = s.Close()
			}
			return err
		})
		t.Logf("try %d: %v after %v", i, err, took.Round(time.Millisecond))
		if err != nil {
			t.Fatalf("try %d: with WithLastHeardTimer, Connect to a frozen and a live follower failed within T = %v: %v; safety.md: "+
				"\"a connect request unanswered for T/n (n addresses, at least 500 ms) is given up\"", i, T, err)
		}
	}
}

// TestDeadlinesAndCloseDuringLeaderPause attacks safety.md's "A deadline
// is kept ... whatever the connection does" and Close's "returns when the
// server answers or the connection is down, else within about a second
// (13 s at worst)" while the ensemble's leader is frozen and connections
// are being left for silent servers: every recipe's Acquire with a 600 ms
// deadline returns within 850 ms; Close mid-election is bounded; after the
// election no node of ours is left.
func TestDeadlinesAndCloseDuringLeaderPause(t *testing.T) {
	const T = 8 * time.Second
	f := newFixture(t, zktest.WithServers(3))
	ld, _ := followerIdx(t, f)
	ctx := ctxT(t, 90*time.Second)
	s := f.Session(conn.WithSessionTimeout(T))
	sc := f.Session(conn.WithSessionTimeout(T))
	log := logStates(ctx, s)
	root := f.Path("ldl")
	warm, _ := mutex.New(s, root+"/warm")
	_, err := warm.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))
	mc, _ := mutex.New(sc, root+"/closed")
	_, err = mc.Acquire(ctx)
	require.NoError(t, err)
	r := oneOfEach(s, root)
	// What a call was granted is released by the test's goroutine (the
	// mutexes are reentrant per goroutine) once the call is timed.
	var pending []func()
	grantThenRelease := func(acq func(context.Context) (*conn.Lease, error), rel func(context.Context, *conn.Lease) error) func(context.Context) error {
		return func(actx context.Context) error {
			l, err := acq(actx)
			if err == nil {
				pending = append(pending, func() { _ = rel(ctx, l) })
			}
			return err
		}
	}
	releaser := func(lk locker) func(context.Context, *conn.Lease) error {
		return func(c context.Context, _ *conn.Lease) error { return lk.Release(c) }
	}
	calls := []struct {
		name string
		f    func(ctx context.Context) error
	}{
		{"mutex.Acquire", grantThenRelease(r.m.Acquire, releaser(r.m))},
		{"rwlock.Write", grantThenRelease(r.rw.WriteLock().Acquire, releaser(r.rw.WriteLock()))},
		{"semaphoremutex", grantThenRelease(r.sm.Acquire, releaser(r.sm))},
		{"semaphore", grantThenRelease(r.sem.Acquire, r.sem.ReturnLease)},
		{"exclusive", grantThenRelease(r.x.Acquire, releaser(r.x))},
		{"leader.Campaign", grantThenRelease(r.e.Campaign, func(c context.Context, _ *conn.Lease) error { return r.e.Resign(c) })},
		{"multilock", func(actx context.Context) error {
			_, err := r.ml.Acquire(actx)
			if err == nil {
				pending = append(pending, func() { _ = r.ml.Release(ctx) })
			}
			return err
		}},
	}
	paused := time.Now()
	require.NoError(t, f.Pause(ld))
	resumed := false
	defer func() {
		if !resumed {
			_ = f.Resume(ld)
		}
	}()
	closed := make(chan time.Duration, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond) // Close mid-election
		start := time.Now()
		_ = sc.Close()
		closed <- time.Since(start)
	}()
	for round := 0; round < 3; round++ {
		for _, call := range calls {
			took, err := timed(ctx, 600*time.Millisecond, call.f)
			if took > 850*time.Millisecond {
				t.Errorf("%v after the leader's pause: %s returned %v after its 600 ms deadline (safety.md: \"returns at the latest "+
					"100 ms after its ctx ends, plus scheduling, whatever the connection does\")",
					time.Since(paused).Round(time.Millisecond), call.name, took-600*time.Millisecond)
			}
			if err == nil {
				t.Logf("%s granted %v after the pause", call.name, time.Since(paused).Round(time.Millisecond))
			}
			for _, rel := range pending {
				rel()
			}
			pending = nil
		}
	}
	tc := recv(t, closed, 15*time.Second, "Close mid-election did not return within 15 s (\"13 s at worst\")")
	t.Logf("Close mid-election took %v", tc.Round(time.Millisecond))
	if tc > 13*time.Second {
		t.Errorf("Close took %v mid-election", tc)
	}
	require.NoError(t, f.Resume(ld))
	resumed = true
	require.NoError(t, f.WaitServing(ctx))
	zc := f.Raw()
	// Whatever the timed-out calls left must go (their session may have
	// been lost too, or kept; either way nothing stays).
	if !eventually(3*T, func() bool { return countNodes(zc, root) == 0 }) {
		ep, _ := connlink.Of(s).Epoch(ctx)
		t.Errorf("nodes left 3T after the leader's resume (safety.md: \"No node is left once the connection recovers\"): %v; "+
			"the session's epoch now 0x%x, states %s", ephemeralsUnder(zc, root), ep.SessionID(), log)
	}
}
