package conn_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// What the ensemble forgives costs no session: a server that goes silent
// is left for another, a connect request is not waited on for ever, and a
// session the client gave up is closed on the server at once.

// followers returns the indexes of c's followers.
func followers(t *testing.T, c *zktest.Cluster) []int {
	t.Helper()
	require.NoError(t, c.WaitServing(context.Background()))
	leader, err := c.Leader()
	require.NoError(t, err)
	return []int{(leader + 1) % 3, (leader + 2) % 3}
}

// index is the index of the server at addr among c's servers.
func index(t *testing.T, c *zktest.Cluster, addr string) int {
	t.Helper()
	for i, srv := range c.Servers() {
		if srv == addr {
			return i
		}
	}
	t.Fatalf("%q is none of %v", addr, c.Servers())
	return -1
}

// TestFollowerPauseKeepsSession freezes the follower a client is connected
// to for longer than the session timeout (a JVM's pause, a stalled VM),
// twice. The client must leave it for the other follower early enough for
// the quorum timer's proof to come from there: the epoch, its ephemeral
// node and its watch survive, with Suspended and Reconnected between.
func TestFollowerPauseKeepsSession(t *testing.T) {
	const timeout = 4 * time.Second
	c := zktest.New(t, zktest.WithServers(3))
	f := followers(t, c)
	s := connect(t, []string{c.Servers()[f[0]], c.Servers()[f[1]]}, conn.WithSessionTimeout(timeout))
	ep := epoch(t, s)
	ctx := context.Background()
	node := c.Root() + "-eph"
	_, err := connlink.Of(ep).Create(ctx, node, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	_, _, watch, err := connlink.Of(ep).GetW(ctx, node)
	require.NoError(t, err)
	sub := subscribe(t, s)

	for round := range 2 {
		on := index(t, c, conn.ServerOf(s))
		left := conn.ServersLeft(s)
		paused := time.Now()
		require.NoError(t, c.Pause(on))
		ev := expect(t, sub, timeout, conn.Suspended)
		suspended := ev.Time.Sub(paused)
		ev = expect(t, sub, timeout, conn.Reconnected)
		assert.Same(t, ep, ev.Epoch)
		t.Logf("round %d: server %d paused; Suspended after %v, Reconnected after %v, on server %s",
			round, on, suspended.Round(time.Millisecond), ev.Time.Sub(paused).Round(time.Millisecond), conn.ServerOf(s))
		assert.Less(t, suspended, timeout*7/12, "the silent server is left before the quorum deadline")
		assert.Greater(t, conn.ServersLeft(s), left, "left for being silent")
		// Past the session timeout: a client still waiting on the frozen
		// server would have lost its session by now.
		time.Sleep(timeout + time.Second - time.Since(paused)) // the fault's length, not a wait for a result
		require.NoError(t, c.Resume(on))
		require.NoError(t, c.WaitServing(ctx), "the resumed follower rejoins the quorum") // else the next round's pause leaves none
		require.NoError(t, ep.Err(), "the epoch outlives the pause")
		ok, _, err := connlink.Of(ep).Exists(ctx, node)
		require.NoError(t, err)
		assert.True(t, ok, "the ephemeral node outlives the pause")
		select {
		case ev := <-sub:
			t.Fatalf("after the pause: %s", describe(ev))
		default:
		}
	}
	select {
	case ev := <-watch:
		t.Fatalf("the node's watch fired: %v", ev)
	default:
	}
	require.NoError(t, connlink.Of(ep).Delete(ctx, node, -1))
	select {
	case ev := <-watch:
		assert.Equal(t, zk.EventNodeDeleted, ev.Type, "the watch set before the pauses still works")
	case <-time.After(10 * time.Second):
		t.Fatal("the watch set before the pauses never fired")
	}
}

// TestConnectWhileServerPaused connects, again and again, while one server
// of three is frozen: go-zookeeper alone waits 20 read timeouts (6.7
// session timeouts) for the frozen server's answer when it tries it first;
// a connect request is given up after T/3 here, and Connect finds a live
// server within the session timeout every time.
func TestConnectWhileServerPaused(t *testing.T) {
	const timeout = 3 * time.Second
	c := zktest.New(t, zktest.WithServers(3))
	f := followers(t, c)
	require.NoError(t, c.Pause(f[0]))
	t.Cleanup(func() { _ = c.Resume(f[0]) })
	for i := range 6 {
		// The frozen server first, so that most tries meet it (go-zookeeper
		// shuffles the list).
		servers := []string{c.Servers()[f[0]], c.Servers()[f[1]]}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		start := time.Now()
		s, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(timeout))
		cancel()
		require.NoError(t, err, "try %d", i)
		t.Logf("try %d: connected in %v", i, time.Since(start).Round(time.Millisecond))
		s.Close()
	}
}

// TestGivenUpSessionClosedOnServer is a client cut off long enough for the
// quorum timer to give its session up, while the server keeps it for the
// rest of the session timeout. The client closes that session on the
// server as soon as the path is back, so its ephemeral node (the place of
// a holder or a waiter) does not block the next contender until the
// server expires it.
func TestGivenUpSessionClosedOnServer(t *testing.T) {
	const timeout = 8 * time.Second
	c := zktest.New(t)
	ctx := context.Background()
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(timeout))
	obs := connect(t, c.Servers())
	ep := epoch(t, s)
	node := c.Root() + "-ghost"
	_, err := connlink.Of(ep).Create(ctx, node, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	ok, _, watch, err := connlink.Of(epoch(t, obs)).ExistsW(ctx, node)
	require.NoError(t, err)
	require.True(t, ok)
	sub := subscribe(t, s)

	cut := time.Now()
	p.Blackhole()
	lost := expectPast(t, sub, timeout, conn.Lost)
	require.ErrorIs(t, lost.Err, conn.ErrSessionTimeout)
	p.Heal()
	healed := time.Now()
	select {
	case ev := <-watch:
		require.Equal(t, zk.EventNodeDeleted, ev.Type)
		t.Logf("T %v: given up %v after the cut, healed, node deleted %v after the heal (the server would have kept it until about %v after the cut)",
			timeout, lost.Time.Sub(cut).Round(time.Millisecond), time.Since(healed).Round(time.Millisecond), timeout)
		assert.Less(t, time.Since(healed), time.Second, "closed within a second of the heal")
	case <-time.After(2 * timeout):
		t.Fatal("the given-up session's node was never deleted")
	}
	expect(t, sub, 20*time.Second, conn.Connected)
}

// TestOwnTrafficKeepsEpoch queues 5,000 waiters of one Session on a
// mutex another Session holds, with no fault: the session's own burst of
// requests must not delay the quorum timer's proof. Its syncs are compared
// with those of an idle session in the same process, which a loaded
// machine delays as much: the busy session's slowest sync may not be
// slower by more than T/6, and where the idle one kept its margin the busy
// one's epoch must not end.
func TestOwnTrafficKeepsEpoch(t *testing.T) {
	const (
		timeout = 3 * time.Second
		waiters = 5000
	)
	c := zktest.New(t)
	holder := connect(t, c.Servers())
	var busy, idle slowest
	s := connect(t, c.Servers(), conn.WithSessionTimeout(timeout), conn.WithMetrics(metrics.Hooks{Request: busy.sync}))
	connect(t, c.Servers(), conn.WithSessionTimeout(timeout), conn.WithMetrics(metrics.Hooks{Request: idle.sync}))
	path := c.Root() + "/lock"
	m, err := mutex.New(holder, path)
	require.NoError(t, err)
	_, err = m.Acquire(context.Background())
	require.NoError(t, err)
	sub := subscribe(t, s)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := mutex.New(s, path)
			if err != nil {
				errs <- err
				return
			}
			if _, err := m.Acquire(ctx); err != nil && ctx.Err() == nil {
				errs <- err
			}
		}()
	}
	var lost []conn.Event
	watch := func(d time.Duration) {
		end := time.After(d)
		for {
			select {
			case ev := <-sub:
				lost = append(lost, ev)
			case err := <-errs:
				if lost == nil {
					t.Fatalf("a waiter failed: %v", err)
				}
			case <-end:
				return
			}
		}
	}
	start := time.Now()
	for {
		kids, _, err := holder.Children(context.Background(), path)
		if err == nil && len(kids) == waiters+1 || lost != nil {
			break
		}
		require.Less(t, time.Since(start), 2*time.Minute, "the waiters never all queued")
		watch(100 * time.Millisecond)
	}
	t.Logf("%d waiters queued in %v", waiters, time.Since(start).Round(time.Millisecond))
	watch(3 * timeout) // until every waiter has its watch, and some session timeouts more
	cancel()
	wg.Wait()
	require.NoError(t, m.Release(context.Background()))

	b, i := busy.get(), idle.get()
	t.Logf("slowest quorum sync: %v with %d waiters, %v idle; transitions of the busy session: %v",
		b.Round(time.Millisecond), waiters, i.Round(time.Millisecond), lost)
	require.Positive(t, b, "the quorum timer's syncs are reported to metrics.Hooks.Request")
	assert.Less(t, b-i, timeout/6, "the busy session's syncs wait behind its own requests")
	if i < timeout*7/12-timeout/6 {
		assert.Empty(t, lost, "the idle session kept its margin, the busy one lost its epoch")
	}
}

// slowest keeps the longest quorum sync answered to a session.
type slowest struct {
	mu  sync.Mutex
	max time.Duration
}

func (s *slowest) sync(r metrics.Request) {
	if r.Op != metrics.OpSync || r.Err != nil { // a sync cut by the epoch's end proves nothing
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.max = max(s.max, r.Duration)
}

func (s *slowest) get() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// TestLeaderPauseWorkResumes freezes the ensemble's leader while one
// session holds a mutex and another waits for it. The election outlasts
// 7T/12, so the quorum timer ends both epochs, as safety needs: but the
// holder's given-up session is closed on the server as soon as the new
// leader serves, and the waiter, queued again in its new epoch, holds the
// mutex within a second of the election (not when the server expires the
// old session, nor after go-zookeeper's 6.7 T wait on the frozen leader).
func TestLeaderPauseWorkResumes(t *testing.T) {
	const timeout = 4 * time.Second
	c := zktest.New(t, zktest.WithServers(3))
	require.NoError(t, c.WaitServing(context.Background()))
	leader, err := c.Leader()
	require.NoError(t, err)
	a := connect(t, c.Servers(), conn.WithSessionTimeout(timeout))
	b := connect(t, c.Servers(), conn.WithSessionTimeout(timeout))
	path := c.Root() + "/lock"
	ma, err := mutex.New(a, path)
	require.NoError(t, err)
	la, err := ma.Acquire(context.Background())
	require.NoError(t, err)
	mb, err := mutex.New(b, path)
	require.NoError(t, err)
	granted := make(chan time.Time, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		if _, err := mb.Acquire(ctx); err == nil {
			granted <- time.Now()
			assert.NoError(t, mb.Release(context.Background()))
		}
		close(granted)
	}()
	waitUntil(t, 10*time.Second, "b queued", func() bool {
		kids, _, err := a.Children(context.Background(), path)
		return err == nil && len(kids) == 2
	})

	paused := time.Now()
	require.NoError(t, c.Pause(leader))
	t.Cleanup(func() { _ = c.Resume(leader) })
	var elected time.Time
	for elected.IsZero() {
		if i, err := c.Leader(); err == nil && i != leader {
			elected = time.Now()
		}
		require.Less(t, time.Since(paused), 30*time.Second, "no new leader")
		time.Sleep(20 * time.Millisecond) // polling the servers' mode
	}
	var at time.Time
	select {
	case at = <-granted:
	case <-time.After(30 * time.Second):
	}
	require.False(t, at.IsZero(), "b never held the mutex")
	<-la.Lost()
	t.Logf("T %v: leader paused; new leader after %v; the waiter held the mutex %v after the election (holder's lease lost: %v)",
		timeout, elected.Sub(paused).Round(time.Millisecond), at.Sub(elected).Round(time.Millisecond), la.Err())
	assert.Less(t, at.Sub(elected), 1500*time.Millisecond, "work resumes within the election and a second")
}
