package conn_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func connect(t *testing.T, servers []string, opts ...conn.Option) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := conn.Connect(ctx, servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func epoch(t *testing.T, s *conn.Session) *conn.Epoch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)
	return ep
}

// subscribe subscribes to s until the test ends.
func subscribe(t *testing.T, s *conn.Session) <-chan conn.Event {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return s.Subscribe(ctx)
}

// describe formats ev for a failure message.
func describe(ev conn.Event) string {
	var id int64
	if ev.Epoch != nil {
		id = ev.Epoch.SessionID()
	}
	return fmt.Sprintf("%v(session 0x%x, err %v)", ev.State, id, ev.Err)
}

// next returns the next transition, failing the test if none comes in time.
func next(t *testing.T, sub <-chan conn.Event, within time.Duration) conn.Event {
	t.Helper()
	select {
	case ev, ok := <-sub:
		require.True(t, ok, "the subscription ended")
		return ev
	case <-time.After(within):
		t.Fatalf("no state transition within %v", within)
		return conn.Event{}
	}
}

func expect(t *testing.T, sub <-chan conn.Event, within time.Duration, want conn.State) conn.Event {
	t.Helper()
	ev := next(t, sub, within)
	require.Equal(t, want, ev.State, "got %s", describe(ev))
	return ev
}

// expectPast is expect, passing over Suspended and Reconnected on the way.
func expectPast(t *testing.T, sub <-chan conn.Event, within time.Duration, want conn.State) conn.Event {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ev := next(t, sub, time.Until(deadline))
		if ev.State == want {
			return ev
		}
		require.Contains(t, []conn.State{conn.Suspended, conn.Reconnected}, ev.State, "waiting for %v, got %s", want, describe(ev))
	}
}

// TestServerRestartKeepsSession restarts the one server. The restart (a
// container or a JVM starting, several seconds on a loaded machine) may
// outlast what the quorum timer allows (about T/2), which would end the epoch locally, as
// documented: the last-heard timer keeps the session for up to T.
func TestServerRestartKeepsSession(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers(), conn.WithSessionTimeout(8*time.Second), conn.WithLastHeardTimer())
	ep := epoch(t, s)
	sub := subscribe(t, s)

	require.NoError(t, c.Kill(0))
	ev := expect(t, sub, 10*time.Second, conn.Suspended)
	assert.Same(t, ep, ev.Epoch)
	require.NoError(t, c.Restart(0))
	ev = expect(t, sub, 20*time.Second, conn.Reconnected)
	assert.Same(t, ep, ev.Epoch)
	assert.NoError(t, ep.Err(), "the epoch survives a server restart")

	ep2 := epoch(t, s)
	assert.Same(t, ep, ep2)
	_, _, err := connlink.Of(ep2).Children(context.Background(), "/")
	assert.NoError(t, err)
}

func TestServerConfirmedExpiry(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	ctx := context.Background()
	ep := epoch(t, s)
	node := c.Root() + "-expiry"
	_, err := connlink.Of(ep).Create(ctx, node, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	sub := subscribe(t, s)

	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))

	// The server drops the connection (Suspended), then refuses the session.
	lost := expectPast(t, sub, 20*time.Second, conn.Lost)
	assert.Same(t, ep, lost.Epoch)
	assert.ErrorIs(t, lost.Err, conn.ErrSessionExpired)
	select {
	case <-ep.Done():
	default:
		t.Fatal("the old epoch must be over once Lost is sent")
	}
	assert.ErrorIs(t, ep.Err(), conn.ErrEpochEnded)
	assert.ErrorIs(t, ep.Err(), conn.ErrSessionExpired)
	_, _, err = connlink.Of(ep).Get(ctx, "/")
	assert.ErrorIs(t, err, conn.ErrEpochEnded, "operations on an ended epoch fail")

	conn2 := expect(t, sub, 20*time.Second, conn.Connected)
	assert.NotEqual(t, ep.SessionID(), conn2.Epoch.SessionID(), "a new epoch is a new ZooKeeper session")
	ep2 := epoch(t, s)
	assert.Same(t, conn2.Epoch, ep2)
	ok, _, err := connlink.Of(ep2).Exists(ctx, node)
	require.NoError(t, err)
	assert.False(t, ok, "the ephemeral node of the expired session is gone")
}

// TestPartitionLocalTimer cuts the client off with a blackhole longer than the
// session timeout T: the server cannot tell the client, so Lost must come from
// the local timer. With the quorum timer (the default), no later than 7T/12
// after the cut (the last sync answered was sent before it); with
// WithLastHeardTimer(), no later than T after it.
func TestPartitionLocalTimer(t *testing.T) {
	c := zktest.New(t)
	const timeout = 2 * time.Second
	for _, quorum := range []bool{true, false} {
		p := zktest.NewProxy(t, c.Servers())
		s := connect(t, p.Addrs(), timerOpts(quorum, conn.WithSessionTimeout(timeout))...)
		ep := epoch(t, s)
		require.Equal(t, timeout, connlink.Of(ep).Timeout())
		sub := subscribe(t, s)

		cut := time.Now()
		p.Blackhole()
		lost := expectPast(t, sub, 2*timeout, conn.Lost)
		delay := lost.Time.Sub(cut)
		t.Logf("quorum timer %v: Lost signalled %v after the blackhole began (session timeout %v)", quorum, delay, timeout)
		assert.ErrorIs(t, lost.Err, conn.ErrSessionTimeout)
		if quorum {
			assert.LessOrEqual(t, delay, timeout*7/12+50*time.Millisecond, "the quorum timer fires no later than 7T/12 after the cut")
			// At least 7T/12 − T/12 after the cut when the syncs are answered
			// at once; a loaded machine answers them later, and the epoch
			// ends earlier: the margin is never smaller for it.
			assert.Greater(t, delay, time.Duration(0), "after the cut")
		} else {
			assert.LessOrEqual(t, delay, timeout+50*time.Millisecond, "the local timer fires no later than the session timeout after the disconnect")
			assert.GreaterOrEqual(t, delay, timeout/2, "not absurdly early either")
		}

		p.Heal()
		next := expect(t, sub, 20*time.Second, conn.Connected)
		assert.NotEqual(t, ep.SessionID(), next.Epoch.SessionID())
		s.Close()
	}
}

func TestLeaderKillKeepsSession(t *testing.T) {
	c := zktest.New(t, zktest.WithServers(3))
	s := connect(t, c.Servers(), conn.WithSessionTimeout(8*time.Second))
	ctx := context.Background()
	ep := epoch(t, s)
	node := c.Root() + "-leader"
	_, err := connlink.Of(ep).Create(ctx, node, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	sub := subscribe(t, s)

	leader, err := c.Leader()
	require.NoError(t, err)
	require.NoError(t, c.Kill(leader))
	// Every server drops its clients while a new leader is elected.
	expect(t, sub, 10*time.Second, conn.Suspended)
	expect(t, sub, 20*time.Second, conn.Reconnected)
	assert.NoError(t, ep.Err())
	ok, _, err := connlink.Of(ep).Exists(ctx, node)
	require.NoError(t, err)
	assert.True(t, ok, "the ephemeral node survives the leader's death")
	assert.Same(t, ep, epoch(t, s))
}

// A subscriber that reads nothing while many transitions happen still gets
// every one of them, in order.
func TestSlowSubscriberMissesNothing(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	sub := subscribe(t, s)
	ctx := context.Background()

	var ids []int64
	for i := 0; i < 3; i++ {
		ep := epoch(t, s)
		ids = append(ids, ep.SessionID())
		require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
		waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		<-ep.Done()
		_, err := connlink.Of(s).Epoch(waitCtx) // the next epoch has begun
		cancel()
		require.NoError(t, err)
	}
	for _, id := range ids {
		lost := expectPast(t, sub, time.Second, conn.Lost)
		assert.Equal(t, id, lost.Epoch.SessionID())
		connected := expect(t, sub, time.Second, conn.Connected)
		assert.NotEqual(t, id, connected.Epoch.SessionID())
	}
	s.Close()
	expect(t, sub, time.Second, conn.Closed)
	select {
	case ev, ok := <-sub:
		assert.False(t, ok, "nothing after Closed, got %s", describe(ev))
	case <-time.After(time.Second):
		t.Error("the channel is not closed after Closed")
	}
}

func TestCloseIsPromptAndIdempotentWithServerDown(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers(), conn.WithSessionTimeout(8*time.Second))
	ep := epoch(t, s)
	sub := subscribe(t, s)
	require.NoError(t, c.Kill(0))
	expect(t, sub, 10*time.Second, conn.Suspended)

	start := time.Now()
	require.NoError(t, s.Close())
	t.Logf("Close with the server down: %v", time.Since(start).Round(time.Millisecond))
	assert.Less(t, time.Since(start), 2*time.Second, "Close returns within 2 s with the ensemble down")
	require.NoError(t, s.Close(), "Close is idempotent")
	ev := expect(t, sub, time.Second, conn.Closed)
	assert.ErrorIs(t, ev.Err, conn.ErrClosed)

	assert.ErrorIs(t, ep.Err(), conn.ErrClosed)
	_, err := connlink.Of(s).Epoch(context.Background())
	assert.ErrorIs(t, err, conn.ErrClosed)
	_, _, err = connlink.Of(ep).Children(context.Background(), "/")
	assert.ErrorIs(t, err, conn.ErrEpochEnded)
	assert.Equal(t, conn.Closed, s.State())
}

func TestOperationsRetryAcrossAConnectionCut(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(8*time.Second), conn.WithNamespace(c.Root()))
	ctx := context.Background()
	ep := epoch(t, s)
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, "/a/b"))
	_, err := connlink.Of(ep).Create(ctx, "/a/b", []byte("v"), zk.FlagPersistent, connlink.Of(s).ACL())
	require.NoError(t, err)

	before := connlink.Of(s).Stats()
	p.Cut()
	data, _, err := connlink.Of(ep).Get(ctx, "/a/b")
	require.NoError(t, err, "a read is retried across a connection cut")
	assert.Equal(t, "v", string(data))
	assert.NoError(t, ep.Err(), "same epoch")
	d := connlink.Of(s).Stats().Sub(before)
	assert.GreaterOrEqual(t, d.Requests[metrics.OpGet], int64(1))

	// The namespace is invisible to the caller and real on the server.
	raw := connect(t, c.Servers())
	ok, _, err := raw.Exists(ctx, c.Root()+"/a/b")
	require.NoError(t, err)
	assert.True(t, ok)
	names, _, err := connlink.Of(ep).Children(ctx, "/a")
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, names)
}

func TestOperationsHonourContextWhileDisconnected(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(8*time.Second))
	p.Blackhole()
	defer p.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := s.Get(ctx, "/")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestSuspendedAsLostPolicy(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(8*time.Second), conn.WithSuspendedAsLost())
	ep := epoch(t, s)
	sig := conn.LostSignal(ep)
	sub := subscribe(t, s)
	p.Cut()
	expect(t, sub, 10*time.Second, conn.Suspended)
	select {
	case <-sig:
	case <-time.After(time.Second):
		t.Fatal("with WithSuspendedAsLost(), Suspended counts as lost for holders")
	}
	expect(t, sub, 10*time.Second, conn.Reconnected)
	assert.NoError(t, ep.Err(), "the epoch itself lives on")
	select {
	case <-conn.LostSignal(ep):
		t.Fatal("a lock taken after Reconnected starts with a fresh signal")
	default:
	}

	// Default policy: a cut is not a loss.
	s2 := connect(t, p.Addrs(), conn.WithSessionTimeout(8*time.Second))
	ep2 := epoch(t, s2)
	sub2 := subscribe(t, s2)
	p.Cut()
	expect(t, sub2, 10*time.Second, conn.Suspended)
	select {
	case <-conn.LostSignal(ep2):
		t.Fatal("by default only the end of the epoch counts as lost")
	default:
	}
	expect(t, sub2, 10*time.Second, conn.Reconnected)
}

func TestDigestAuth(t *testing.T) {
	c := zktest.New(t)
	ctx := context.Background()
	acl := zk.DigestACL(zk.PermAll, "alice", "secret")
	alice := connect(t, c.Servers(), conn.WithDigestAuth("alice", "secret"), conn.WithACL(acl))
	parent, child := c.Root()+"-acl", c.Root()+"-acl/c"
	_, err := alice.Create(ctx, parent, []byte("x"), zk.FlagPersistent, connlink.Of(alice).ACL())
	require.NoError(t, err)
	_, err = alice.Create(ctx, child, nil, zk.FlagEphemeral, connlink.Of(alice).ACL())
	require.NoError(t, err)
	t.Cleanup(func() {
		alice.Delete(context.Background(), child, -1)
		alice.Delete(context.Background(), parent, -1)
	})

	mallory := connect(t, c.Servers())
	// Deleting needs DELETE on the parent; reading needs READ on the node.
	err = mallory.Delete(ctx, child, -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	_, _, err = mallory.Get(ctx, parent)
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	_, err = mallory.Create(ctx, parent+"/m", nil, zk.FlagEphemeral, connlink.Of(mallory).ACL())
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	data, _, err := alice.Get(ctx, parent)
	require.NoError(t, err)
	assert.Equal(t, "x", string(data))
}

func TestConnectErrors(t *testing.T) {
	ctx := context.Background()
	_, err := conn.Connect(ctx, nil)
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "no ZooKeeper server given")
	_, err = conn.Connect(ctx, []string{"no-port"})
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, `server address "no-port"`)

	for name, opt := range map[string]conn.Option{
		"nil option":          nil,
		"short timeout":       conn.WithSessionTimeout(time.Millisecond),
		"nil logger":          conn.WithLogger(nil),
		"empty user":          conn.WithDigestAuth("", "pw"),
		"nil dialer":          conn.WithDialer(nil),
		"relative namespace":  conn.WithNamespace("ns"),
		"reserved namespace":  conn.WithNamespace("/zookeeper"),
		"bad retry":           conn.WithRetry(0, 0, 0),
		"retry max below min": conn.WithRetry(time.Second, time.Millisecond, 0),
		"negative attempts":   conn.WithRetry(time.Millisecond, time.Second, -1),
		"empty acl":           conn.WithACL(nil),
	} {
		_, err := conn.Connect(ctx, []string{"127.0.0.1:1"}, opt)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, name)
	}

	// Nothing listens: ctx's deadline ends the wait with a clear error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer dcancel()
	_, err = conn.Connect(dctx, []string{addr})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, addr, "the error names the servers")
	assert.Less(t, time.Since(start), 3*time.Second)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = conn.Connect(cctx, []string{addr})
	assert.ErrorIs(t, err, context.Canceled)
}

// TestNamespaceValidation: every form WithNamespace's doc calls invalid fails
// Connect with ErrInvalidArgument before anything is dialed; valid ones pass
// the option check (and then time out: nothing listens).
func TestNamespaceValidation(t *testing.T) {
	for _, tc := range []struct {
		ns    string
		valid bool
	}{
		{"/", false},
		{"", false},
		{"ns", false},
		{"/a/", false},
		{"//a", false},
		{"/a//b", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/a\x00b", false},
		{"/a\u0001b", false},
		{"/zookeeper", false},
		{"/zookeeper/quota", false},
		{"/a", true},
		{"/a/b", true},
		{"/zookeeperish", true},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := conn.Connect(ctx, []string{"127.0.0.1:1"}, conn.WithNamespace(tc.ns))
		cancel()
		if tc.valid {
			assert.NotErrorIs(t, err, conn.ErrInvalidArgument, "namespace %q", tc.ns)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "namespace %q", tc.ns)
		} else {
			assert.ErrorIs(t, err, conn.ErrInvalidArgument, "namespace %q", tc.ns)
		}
	}
}

func TestBadPathsAreRefusedBeforeTheServer(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers())
	ep := epoch(t, s)
	ctx := context.Background()
	before := connlink.Of(s).Stats().TotalRequests()
	_, err := s.Create(ctx, "rel", nil, 0, connlink.Of(s).ACL())
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "is relative")
	_, _, err = s.Get(ctx, "/a/")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "ends with /")
	err = s.Delete(ctx, "/zookeeper/config", -1)
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "path /zookeeper/config is reserved")
	_, err = connlink.Of(ep).Multi(ctx, &zk.DeleteRequest{Path: "//x"})
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "empty segment")
	_, err = connlink.Of(ep).Multi(ctx, "not an op")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "unsupported op string")
	assert.Equal(t, before, connlink.Of(s).Stats().TotalRequests(), "bad input never reaches the server")
}

func TestStatsCountWatchEvents(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers(), conn.WithLogger(zap.NewNop()))
	ctx := context.Background()
	ep := epoch(t, s)
	node := c.Root() + "-watch"
	_, err := s.Create(ctx, node, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	before := connlink.Of(s).Stats()
	_, _, ch, err := connlink.Of(ep).GetW(ctx, node)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, node, -1))
	select {
	case ev := <-ch:
		assert.Equal(t, zk.EventNodeDeleted, ev.Type)
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	d := connlink.Of(s).Stats().Sub(before)
	assert.Equal(t, int64(1), d.WatchEvents)
	assert.Equal(t, int64(1), d.Requests[metrics.OpGetW])
	assert.Equal(t, int64(1), d.Requests[metrics.OpDelete])
}

func TestLeaseGuardedWrite(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers())
	ctx := context.Background()
	ep := epoch(t, s)
	node, err := connlink.Of(ep).Create(ctx, c.Root()+"-lease", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	data := c.Root() + "-data"
	_, err = s.Create(ctx, data, []byte("0"), zk.FlagPersistent, connlink.Of(s).ACL())
	require.NoError(t, err)
	t.Cleanup(func() { s.Delete(context.Background(), data, -1) })

	l := ep.NewLease(node)
	tok, err := l.Fence(ctx)
	require.NoError(t, err)
	assert.Positive(t, tok.Zxid)
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("1"), Version: -1})
	require.NoError(t, err)
	lost := l.Lost()

	// Someone else deletes our node: the lease is lost and writes are refused.
	other := connect(t, c.Servers())
	require.NoError(t, other.Delete(ctx, node, -1))
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed after the node was deleted")
	}
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("2"), Version: -1})
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	got, _, err := s.Get(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, "1", string(got), "the refused write changed nothing")

	// A caller's own failing op is not mistaken for a lost lease.
	node2, err := connlink.Of(ep).Create(ctx, c.Root()+"-lease2", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	l2 := ep.NewLease(node2)
	_, err = l2.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("3"), Version: 99})
	assert.ErrorIs(t, err, zk.ErrBadVersion)
	assert.NotErrorIs(t, err, conn.ErrLeaseLost)

	// A guarded write may not set the lock node's own data.
	_, err = l2.GuardedWrite(ctx, &zk.SetDataRequest{Path: node2, Data: []byte("x"), Version: -1})
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)

	// Someone else changes our (unsealed) node's data: not a loss. A
	// revoke request closes Revoked; guarded writes still go through (the
	// check does not need version 0).
	lost2, revoked2 := l2.Lost(), l2.Revoked()
	watches := connlink.Of(s).Stats().WatchesSet
	require.Eventually(t, func() bool { return connlink.Of(s).Stats().WatchesSet > watches }, 10*time.Second, 10*time.Millisecond)
	watches = connlink.Of(s).Stats().WatchesSet
	_, err = other.Set(ctx, node2, []byte("mine now"), -1)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return connlink.Of(s).Stats().WatchesSet > watches }, 10*time.Second, 10*time.Millisecond,
		"the lease reads its node again after the change")
	watches = connlink.Of(s).Stats().WatchesSet
	assert.False(t, isClosed(lost2), "a data change is not a loss: %v", l2.Err())
	assert.False(t, isClosed(revoked2), "only __REVOKE__ is a revoke request")
	_, err = other.Set(ctx, node2, []byte("__REVOKE__"), -1)
	require.NoError(t, err)
	select {
	case <-revoked2:
	case <-time.After(10 * time.Second):
		t.Fatal("Revoked not closed after __REVOKE__ was written")
	}
	require.Eventually(t, func() bool { return connlink.Of(s).Stats().WatchesSet > watches }, 10*time.Second, 10*time.Millisecond)
	assert.False(t, isClosed(lost2), "a revoke request is not a loss: %v", l2.Err())
	_, err = l2.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("4"), Version: -1})
	require.NoError(t, err, "still held: the guarded write goes through")

	l2.Released()
	_, err = l2.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("5"), Version: -1})
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestACLIsACopy: changing what connlink.Session.ACL returns changes
// nothing: not the next call's result, not the ACL of the nodes created
// after.
func TestACLIsACopy(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers())
	acl := connlink.Of(s).ACL()
	require.Equal(t, zk.WorldACL(zk.PermAll), acl)
	acl[0].Perms = zk.PermRead
	acl[0].Scheme = "digest"
	assert.Equal(t, zk.WorldACL(zk.PermAll), connlink.Of(s).ACL())
}

// Connect returns after the Connected transition: State says so, and a
// subscription made then does not get that Connected again.
func TestConnectedBeforeConnectReturns(t *testing.T) {
	c := zktest.New(t)
	for i := 0; i < 5; i++ {
		s := connect(t, c.Servers())
		assert.Equal(t, conn.Connected, s.State())
		sub := subscribe(t, s)
		select {
		case ev := <-sub:
			t.Errorf("unexpected %s", describe(ev))
		case <-time.After(100 * time.Millisecond):
		}
		s.Close()
	}
}
