package leader_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestNewBadInput(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	_, err := leader.New(nil, "/a", "id")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "nil session")
	_, err = leader.New(s, "/a", "")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.EqualError(t, err, "leader: new /a: empty participant id: conn: invalid argument")
	for _, p := range []string{"", "a", "/a/", "/a//b"} {
		_, err = leader.New(s, p, "id")
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, "path %q", p)
		assert.True(t, strings.HasPrefix(err.Error(), "leader: new "), "%v", err)
	}
	_, err = leader.New(s, "/zookeeper/x", "id")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "path /zookeeper/x is reserved")
	_, err = leader.New(s, "/a", "id", nil)
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "nil option")
}

// Campaign, Leader, Participants, Resign, and what Curator's LeaderLatch
// reads in our node: its name and data.
func TestCampaignAndResign(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 3)
	path := testzk.Path(t, c, "election")
	e0 := newElection(t, ss[0], path, "zero")
	e1 := newElection(t, ss[1], path, "one")
	ctx := testzk.Ctx(t, 30*time.Second)

	_, err := e0.Leader(ctx)
	assert.ErrorIs(t, err, leader.ErrNoLeader)
	assert.ErrorIs(t, e0.Resign(ctx), lock.ErrNotHeld)
	assert.ErrorIs(t, e0.Resign(ctx), lock.ErrNotHeld)

	l0, err := e0.Campaign(ctx)
	require.NoError(t, err)
	_, err = e0.Campaign(ctx)
	assert.ErrorIs(t, err, leader.ErrCampaigning, "one handle is one participant")
	tok0, err := l0.Fence(ctx)
	require.NoError(t, err)

	// A follower's campaign that times out leaves nothing behind.
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = e1.Campaign(tctx)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	ps, err := e1.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, "zero", ps[0].ID)

	res := make(chan error, 1)
	var l1 *conn.Lease // e1's, once res has its error
	go func() {
		var err error
		l1, err = e1.Campaign(ctx)
		res <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, ss[2], path)) == 2 }, "the follower queued")

	names := testzk.Children(t, ss[2], path)
	for _, n := range names {
		assert.Regexp(t, `^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-latch-\d{10}$`, n)
	}
	who, err := e1.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "zero", who.ID)
	data, _, err := ss[2].Get(ctx, who.Node)
	require.NoError(t, err)
	assert.Equal(t, "zero", string(data), "node data is the participant id, as LeaderLatch writes it")
	ps, err = e0.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, []string{"zero", "one"}, []string{ps[0].ID, ps[1].ID})
	assert.Equal(t, []bool{true, false}, []bool{ps[0].Holding, ps[1].Holding}, "the leader holds")

	require.NoError(t, e0.Resign(ctx))
	assert.ErrorIs(t, l0.Err(), conn.ErrLeaseLost, "Resign closes Lost")
	require.NoError(t, <-res)
	who, err = e0.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "one", who.ID)
	require.NotNil(t, l1)
	assert.Equal(t, who.Node, l1.Path(), "the lease Campaign returned is the leader's node")
	tok1, err := l1.Fence(ctx)
	require.NoError(t, err)
	assert.Positive(t, tok1.Compare(tok0), "fencing tokens grow with every leader: %v after %v", tok1, tok0)
	require.NoError(t, e1.Resign(ctx))
	assert.ErrorIs(t, e1.Resign(ctx), lock.ErrNotHeld)
}

// watchCount is the number of watches (data and child) server 0 holds.
func watchCount(t *testing.T, c *zktest.Cluster) int {
	t.Helper()
	m, err := c.Mntr(testzk.Ctx(t, 10*time.Second), 0)
	require.NoError(t, err)
	n, err := strconv.Atoi(m["zk_watch_count"])
	require.NoError(t, err, "zk_watch_count in %v", m)
	return n
}

// watchesOn counts the watches server 0 reports (wchc) for session sid on
// paths under prefix.
func watchesOn(t *testing.T, c *zktest.Cluster, sid int64, prefix string) int {
	t.Helper()
	out, err := c.FourLetter(testzk.Ctx(t, 10*time.Second), 0, "wchc")
	require.NoError(t, err)
	require.NotContains(t, out, "not in the whitelist")
	n, in := 0, false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "0x") {
			in = strings.TrimSpace(line) == fmt.Sprintf("0x%x", sid)
			continue
		}
		if p := strings.TrimSpace(line); in && strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

// runTerm starts Run with a function that reports its ctx and waits for
// it to be cancelled; it returns the function's ctx (once it runs) and
// Run's result.
func runTerm(t *testing.T, ctx context.Context, e *leader.Election) (context.Context, <-chan error) {
	t.Helper()
	started := make(chan context.Context, 1)
	res := make(chan error, 1)
	go func() {
		res <- e.Run(ctx, func(fctx context.Context, lease *conn.Lease) error {
			if lease == nil || lease.Err() != nil {
				t.Errorf("fn's lease = %v, want the term's live lease", lease)
			} else if who, err := e.Leader(fctx); err != nil || who.Node != lease.Path() {
				t.Errorf("fn's lease is on %s, the leader's node is %q (%v)", lease.Path(), who.Node, err)
			}
			started <- fctx
			<-fctx.Done()
			return fctx.Err()
		})
	}()
	select {
	case fctx := <-started:
		return fctx, res
	case err := <-res:
		t.Fatalf("Run returned before leading: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not lead within 20s")
	}
	return nil, nil
}

func waitCancelled(t *testing.T, fctx context.Context, d time.Duration) {
	t.Helper()
	select {
	case <-fctx.Done():
	case <-time.After(d):
		t.Fatalf("fn's ctx not cancelled within %v", d)
	}
	assert.ErrorIs(t, context.Cause(fctx), leader.ErrLeadershipLost)
	assert.ErrorIs(t, context.Cause(fctx), conn.ErrLeaseLost)
}

// Run's function is cancelled the moment leadership is no longer safe.
func TestRunCancelled(t *testing.T) {
	c := testzk.Shared(t)

	t.Run("SessionExpired", func(t *testing.T) {
		s := testzk.Connect(t, c.Servers())
		e := newElection(t, s, testzk.Path(t, c, "election"), "a")
		ctx := testzk.Ctx(t, 60*time.Second)
		fctx, res := runTerm(t, ctx, e)
		ep := testzk.Epoch(t, s)
		require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
		waitCancelled(t, fctx, 20*time.Second)
		assert.ErrorIs(t, context.Cause(fctx), conn.ErrSessionExpired)
		err := <-res
		assert.ErrorIs(t, err, leader.ErrLeadershipLost)
		assert.ErrorIs(t, err, conn.ErrSessionExpired)
	})

	t.Run("NodeDeleted", func(t *testing.T) {
		ss := testzk.ConnectN(t, c.Servers(), 2)
		path := testzk.Path(t, c, "election")
		e := newElection(t, ss[0], path, "a")
		ctx := testzk.Ctx(t, 60*time.Second)
		fctx, res := runTerm(t, ctx, e)
		who, err := e.Leader(ctx)
		require.NoError(t, err)
		// Wait for the lease's node watch, then delete as a third party.
		testzk.Eventually(t, 10*time.Second, func() bool { return watchesOn(t, c, testzk.Epoch(t, ss[0]).SessionID(), who.Node) == 1 }, "lease watch")
		require.NoError(t, ss[1].Delete(ctx, who.Node, -1))
		waitCancelled(t, fctx, 10*time.Second)
		assert.ErrorIs(t, <-res, leader.ErrLeadershipLost)
	})

	t.Run("Resign", func(t *testing.T) {
		s := testzk.Connect(t, c.Servers())
		path := testzk.Path(t, c, "election")
		e := newElection(t, s, path, "a")
		ctx := testzk.Ctx(t, 60*time.Second)
		fctx, res := runTerm(t, ctx, e)
		require.NoError(t, e.Resign(ctx))
		waitCancelled(t, fctx, 5*time.Second)
		assert.ErrorIs(t, <-res, leader.ErrLeadershipLost)
		assert.Empty(t, testzk.Children(t, s, path))
	})

	t.Run("SuspendedAsLost", func(t *testing.T) {
		p := zktest.NewProxy(t, c.Servers())
		s := testzk.Connect(t, p.Addrs(), conn.WithSuspendedAsLost())
		e := newElection(t, s, testzk.Path(t, c, "election"), "a")
		ctx := testzk.Ctx(t, 60*time.Second)
		fctx, res := runTerm(t, ctx, e)
		p.Cut() // the session survives; the connection is suspended
		waitCancelled(t, fctx, 10*time.Second)
		assert.ErrorIs(t, <-res, leader.ErrLeadershipLost)
	})

	t.Run("LocalTimerBlackhole", func(t *testing.T) {
		p := zktest.NewProxy(t, c.Servers())
		s := testzk.Connect(t, p.Addrs(), conn.WithSessionTimeout(4*time.Second))
		observer := testzk.Connect(t, c.Servers())
		path := testzk.Path(t, c, "election")
		e := newElection(t, s, path, "a")
		ctx := testzk.Ctx(t, 60*time.Second)
		fctx, res := runTerm(t, ctx, e)
		p.Blackhole()
		waitCancelled(t, fctx, 20*time.Second)
		assert.ErrorIs(t, context.Cause(fctx), conn.ErrSessionTimeout, "the local timer, not the server, ended it")
		err := <-res
		assert.ErrorIs(t, err, leader.ErrLeadershipLost)
		// The server expires the session too: the node goes.
		testzk.Eventually(t, 30*time.Second, func() bool { return len(testzk.Children(t, observer, path)) == 0 }, "the node went with the session")
		p.Heal()
	})
}

// Run with WithRequeue campaigns again after leadership was lost, and
// returns ctx's error once ctx ends. A function's own error ends Run.
func TestRunRequeue(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	e := newElection(t, ss[0], path, "a", leader.WithRequeue())
	ctx, cancel := context.WithCancel(testzk.Ctx(t, 60*time.Second))
	defer cancel()
	terms := make(chan context.Context, 3)
	res := make(chan error, 1)
	go func() {
		res <- e.Run(ctx, func(fctx context.Context, _ *conn.Lease) error {
			terms <- fctx
			<-fctx.Done()
			return fctx.Err()
		})
	}()
	first := <-terms
	require.NoError(t, e.Resign(ctx))
	waitCancelled(t, first, 5*time.Second)
	select {
	case second := <-terms:
		assert.NoError(t, second.Err(), "a new term")
	case err := <-res:
		t.Fatalf("Run returned instead of requeueing: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no second term within 20s")
	}
	cancel()
	assert.ErrorIs(t, <-res, context.Canceled)
	assert.Empty(t, testzk.Children(t, ss[1], path), "nothing left behind")

	boom := errors.New("boom")
	e2 := newElection(t, ss[0], path, "a", leader.WithRequeue())
	err := e2.Run(testzk.Ctx(t, 30*time.Second), func(context.Context, *conn.Lease) error { return boom })
	assert.ErrorIs(t, err, boom)
	assert.Empty(t, testzk.Children(t, ss[1], path), "resigned after the function's error")
}

// Observe's channel closes when the session is closed.
func TestObserveSessionClosed(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	ch := newElection(t, s, testzk.Path(t, c, "election"), "observer").Observe(context.Background())
	select {
	case p := <-ch:
		assert.Equal(t, lock.Participant{}, p)
	case <-time.After(20 * time.Second):
		t.Fatal("no first value within 20s")
	}
	require.NoError(t, s.Close())
	select {
	case _, ok := <-ch:
		assert.False(t, ok, "closed with the session")
	case <-time.After(10 * time.Second):
		t.Fatal("not closed within 10s of the session's close")
	}
}

// Observe: the current leader first, then changes; a slow reader gets the
// latest leader; the channel closes when ctx ends, and no watch of the
// observer is left on the server while its session stays open.
func TestObserve(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 4)
	path := testzk.Path(t, c, "election")
	obs := newElection(t, ss[3], path, "observer")
	es := []*leader.Election{newElection(t, ss[0], path, "a"), newElection(t, ss[1], path, "b"), newElection(t, ss[2], path, "c")}
	ctx := testzk.Ctx(t, 60*time.Second)
	octx, cancel := context.WithCancel(ctx)
	defer cancel()

	ch := obs.Observe(octx)
	next := func() lock.Participant { t.Helper(); return nextObserved(t, ch) }
	assert.Equal(t, lock.Participant{}, next(), "no leader yet (the path does not exist)")

	_, err := es[0].Campaign(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", next().ID)

	// Slow reader: b and c queue, a resigns, b resigns; the reader looks
	// only now and sees c, the latest leader.
	res := make(chan error, 2)
	for i, e := range es[1:] {
		id := []string{"b", "c"}[i]
		go func() { _, err := e.Campaign(ctx); res <- err }()
		testzk.Eventually(t, 10*time.Second, func() bool {
			ps, err := obs.Participants(ctx)
			return err == nil && ps[len(ps)-1].ID == id
		}, "queued")
	}
	require.NoError(t, es[0].Resign(ctx))
	require.NoError(t, <-res)
	require.NoError(t, es[1].Resign(ctx))
	require.NoError(t, <-res)
	testzk.Eventually(t, 10*time.Second, func() bool {
		return len(ch) == 1 && func() bool {
			who, err := obs.Leader(ctx)
			return err == nil && who.ID == "c"
		}()
	}, "a pending value")
	// The observer may still be publishing; the last value wins.
	var got lock.Participant
	testzk.Eventually(t, 10*time.Second, func() bool {
		select {
		case got = <-ch:
		default:
		}
		return got.ID == "c"
	}, "latest leader c")

	// Resigning and campaigning again is a change, even with the same id.
	require.NoError(t, es[2].Resign(ctx))
	assert.Equal(t, lock.Participant{}, next(), "nobody leads")
	_, err = es[2].Campaign(ctx)
	require.NoError(t, err)
	again := next()
	assert.Equal(t, "c", again.ID)
	assert.NotEqual(t, got.Node, again.Node, "a new node")

	// wchc lists data watches only; mntr's zk_watch_count counts child
	// watches too. Nothing else on this server changes its watches now.
	before := watchCount(t, c)
	cancel()
	select {
	case _, ok := <-ch:
		assert.False(t, ok, "closed when ctx ends")
	case <-time.After(10 * time.Second):
		t.Fatal("not closed within 10s of ctx's end")
	}
	assert.Equal(t, before-1, watchCount(t, c), "the observer's child watch is gone, its session still open")
	assert.NoError(t, testzk.Epoch(t, ss[3]).Err())
	require.NoError(t, es[2].Resign(ctx))
}

// A follower whose Campaign is cancelled while it waits leaves no watch on
// its predecessor: with the leader still leading and both sessions open,
// the server holds none of the follower's session (before, it stayed
// until the leader resigned).
func TestCampaignCancelledLeavesNoWatch(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	e0 := newElection(t, ss[0], path, "a")
	e1 := newElection(t, ss[1], path, "b")
	ctx := testzk.Ctx(t, 30*time.Second)
	_, err := e0.Campaign(ctx)
	require.NoError(t, err)
	who, err := e0.Leader(ctx)
	require.NoError(t, err)

	before := testzk.WatchesSet(ss[1])
	cctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { _, err := e1.Campaign(cctx); res <- err }()
	testzk.Watching(t, ss[1], before)
	sid := testzk.Epoch(t, ss[1]).SessionID()
	require.Equal(t, 1, watchesOn(t, c, sid, who.Node), "the follower watches the leader")
	cancel()
	assert.ErrorIs(t, <-res, context.Canceled)
	assert.Len(t, testzk.Children(t, ss[0], path), 1, "the follower's node is gone")
	assert.Empty(t, testzk.DataWatches(t, c, sid), "no watch of the follower's session is left")
	now, err := e0.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, who.Node, now.Node, "the leader still leads")
}

// nextObserved is the next value of an Observe channel, within 20 s.
func nextObserved(t *testing.T, ch <-chan lock.Participant) lock.Participant {
	t.Helper()
	select {
	case p, ok := <-ch:
		require.True(t, ok, "channel closed early")
		return p
	case <-time.After(20 * time.Second):
		t.Fatal("no value within 20s")
	}
	return lock.Participant{}
}
