package leader_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Run returns the campaign's error when we never led, without calling the
// function and leaving nothing behind: ctx cancelled before Run, and a
// deadline that ends while another participant leads.
func TestRunNeverLed(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	e0 := newElection(t, ss[0], path, "a")
	e1 := newElection(t, ss[1], path, "b")
	ctx := testzk.Ctx(t, 30*time.Second)
	called := func(context.Context, *conn.Lease) error { t.Error("fn called without leadership"); return nil }

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, e1.Run(cctx, called), context.Canceled)
	assert.Empty(t, testzk.Children(t, ss[0], path))

	_, err := e0.Campaign(ctx)
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, e1.Run(tctx, called), context.DeadlineExceeded)
	assert.Len(t, testzk.Children(t, ss[0], path), 1, "only the leader's node")
	assert.ErrorIs(t, e1.Resign(ctx), lock.ErrNotHeld, "never led")
	require.NoError(t, e0.Resign(ctx))
}

// Run on a handle that already leads, or campaigns, is ErrCampaigning, and
// its function is not called.
func TestRunWhileLeading(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "election")
	e := newElection(t, s, path, "a")
	ctx := testzk.Ctx(t, 30*time.Second)
	l, err := e.Campaign(ctx)
	require.NoError(t, err)
	err = e.Run(ctx, func(context.Context, *conn.Lease) error { t.Error("fn called"); return nil })
	assert.ErrorIs(t, err, leader.ErrCampaigning)
	assert.NoError(t, l.Err(), "the leadership is untouched")
	who, err := e.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, l.Path(), who.Node, "still the leader's node")
	require.NoError(t, e.Resign(ctx))
}

// Without WithRequeue, Run returns after one term with the function's error
// (nil or not) and our node deleted; the handle no longer leads.
func TestRunReturnsFnError(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "election")
	e := newElection(t, s, path, "a")
	ctx := testzk.Ctx(t, 30*time.Second)
	boom := errors.New("boom")
	for _, want := range []error{nil, boom} {
		var held *conn.Lease
		err := e.Run(ctx, func(fctx context.Context, lease *conn.Lease) error {
			held = lease
			assert.Len(t, testzk.Children(t, s, path), 1, "our node while we lead")
			return want
		})
		if want == nil {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, boom)
			assert.NotErrorIs(t, err, leader.ErrLeadershipLost)
		}
		assert.Empty(t, testzk.Children(t, s, path), "resigned after the term")
		assert.ErrorIs(t, e.Resign(ctx), lock.ErrNotHeld, "Run's term ended")
		require.NotNil(t, held)
		assert.ErrorIs(t, held.Err(), conn.ErrLeaseLost, "the term's lease is over")
	}
}

// A term that ended because leadership was lost reports it, and wraps the
// function's own error when that is not just its ctx's.
func TestRunLostWrapsFnError(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "election")
	e := newElection(t, s, path, "a")
	ctx := testzk.Ctx(t, 30*time.Second)
	boom := errors.New("boom")
	started := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- e.Run(ctx, func(fctx context.Context, _ *conn.Lease) error {
			close(started)
			<-fctx.Done()
			return boom
		})
	}()
	<-started
	require.NoError(t, e.Resign(ctx))
	err := <-res
	assert.ErrorIs(t, err, leader.ErrLeadershipLost)
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	assert.ErrorIs(t, err, boom)
	assert.Empty(t, testzk.Children(t, s, path))
}

// When Run's own ctx ends during a term, the function's ctx is cancelled
// with ctx's error (leadership was not lost), Run returns it, and our node
// is still deleted although ctx is over; the next participant leads.
func TestRunCtxEndsDuringTerm(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	e0 := newElection(t, ss[0], path, "a")
	e1 := newElection(t, ss[1], path, "b")
	ctx := testzk.Ctx(t, 30*time.Second)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fctx, res := runTerm(t, rctx, e0)
	follower := make(chan error, 1)
	go func() { _, err := e1.Campaign(ctx); follower <- err }()
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, ss[0], path)) == 2 }, "the follower queued")

	cancel()
	<-fctx.Done()
	assert.ErrorIs(t, context.Cause(fctx), context.Canceled)
	assert.NotErrorIs(t, context.Cause(fctx), leader.ErrLeadershipLost)
	err := <-res
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, leader.ErrLeadershipLost)
	require.NoError(t, <-follower, "the follower leads once Run resigned")
	who, err := e1.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", who.ID)
	require.NoError(t, e1.Resign(ctx))
}

// With WithRequeue, a term whose function returns nil is followed by a new
// term (a new node); once ctx ends, Run returns ctx's error, even when the
// function answers its ctx's end with nil.
func TestRunRequeueAfterNil(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "election")
	e := newElection(t, s, path, "a", leader.WithRequeue())
	ctx, cancel := context.WithCancel(testzk.Ctx(t, 30*time.Second))
	defer cancel()
	nodes := make(chan string, 2)
	res := make(chan error, 1)
	go func() {
		n := 0
		res <- e.Run(ctx, func(fctx context.Context, lease *conn.Lease) error {
			nodes <- lease.Path()
			if n++; n == 1 {
				return nil // the first term ends at once
			}
			<-fctx.Done()
			return nil
		})
	}()
	first, second := <-nodes, <-nodes
	assert.NotEqual(t, first, second, "a new node for the new term")
	cancel()
	assert.ErrorIs(t, <-res, context.Canceled)
	assert.Empty(t, testzk.Children(t, s, path))
}

// A handle whose leadership was lost (our node deleted by someone else)
// reports the loss through the lease (Lost closed, Err set), Resign returns
// nil (nothing left to release), and the handle campaigns again.
func TestCampaignAfterLoss(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	e := newElection(t, ss[0], path, "a")
	ctx := testzk.Ctx(t, 30*time.Second)

	for _, resign := range []bool{false, true} {
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		require.NoError(t, ss[1].Delete(ctx, l.Path(), -1))
		select {
		case <-l.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost not closed within 10s of the deletion")
		}
		assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
		if resign {
			assert.NoError(t, e.Resign(ctx), "resigning a lost leadership")
			assert.ErrorIs(t, e.Resign(ctx), lock.ErrNotHeld, "nothing left to resign")
		}
		l2, err := e.Campaign(ctx)
		require.NoError(t, err, "a lost leadership does not block a new campaign")
		assert.NotEqual(t, l.Path(), l2.Path())
		require.NoError(t, e.Resign(ctx))
	}
	assert.Empty(t, testzk.Children(t, ss[1], path))
}

// Resign while our Campaign still waits is lock.ErrNotHeld and changes
// nothing: the campaign goes on and leads once the leader resigns.
func TestResignWhileCampaigning(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	e0 := newElection(t, ss[0], path, "a")
	e1 := newElection(t, ss[1], path, "b")
	ctx := testzk.Ctx(t, 30*time.Second)
	_, err := e0.Campaign(ctx)
	require.NoError(t, err)
	res := make(chan error, 1)
	go func() { _, err := e1.Campaign(ctx); res <- err }()
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, ss[0], path)) == 2 }, "the follower queued")

	assert.ErrorIs(t, e1.Resign(ctx), lock.ErrNotHeld)
	assert.Len(t, testzk.Children(t, ss[0], path), 2, "the follower's node stays")
	require.NoError(t, e0.Resign(ctx))
	require.NoError(t, <-res)
	require.NoError(t, e1.Resign(ctx))
}

// A Resign whose delete cannot be confirmed says so once, with the
// operation and the path: the error matches lock.ErrReleasePending and ctx's,
// and its message names the pending release once.
func TestResignPendingMessage(t *testing.T) {
	c := testzk.Shared(t)
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	direct := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "election")
	e := newElection(t, s, path, "a")
	ctx := testzk.Ctx(t, 30*time.Second)
	_, err := e.Campaign(ctx)
	require.NoError(t, err)

	p.Blackhole()
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = e.Resign(rctx)
	assert.ErrorIs(t, err, lock.ErrReleasePending)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 1, strings.Count(err.Error(), lock.ErrReleasePending.Error()), "said once: %v", err)
	assert.Contains(t, err.Error(), "leader: resign "+path+": ")
	p.Heal()
	testzk.Eventually(t, 20*time.Second, func() bool { return len(testzk.Children(t, direct, path)) == 0 }, "the pending delete done")
}

// Observe outlives an expiry of the observer's session: the channel stays
// open and reports the leader changes that follow, in the new session.
func TestObserveAcrossExpiry(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	obs := newElection(t, ss[1], path, "observer")
	e := newElection(t, ss[0], path, "a")
	ctx := testzk.Ctx(t, 60*time.Second)
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := obs.Observe(octx)
	next := func() lock.Participant { t.Helper(); return nextObserved(t, ch) }
	assert.Equal(t, lock.Participant{}, next())

	ep := testzk.Epoch(t, ss[1])
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
	<-ep.Done()
	_, err := e.Campaign(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", next().ID, "seen after the observer's session expired")
	assert.NotEqual(t, ep.SessionID(), testzk.Epoch(t, ss[1]).SessionID())
	require.NoError(t, e.Resign(ctx))
	assert.Equal(t, lock.Participant{}, next())
	cancel()
	for range ch {
	}
}

// The errors a user meets most, as the locks' (recipes_test's
// TestErrorMessages): the recipe, the operation and the path once, then
// the cause.
func TestErrorMessages(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	e0 := newElection(t, ss[0], path, "a")
	e1 := newElection(t, ss[1], path, "b")
	ctx := testzk.Ctx(t, 30*time.Second)

	assert.EqualError(t, e0.Resign(ctx), "leader: resign "+path+": lock: not held")
	l, err := e0.Campaign(ctx)
	require.NoError(t, err)
	_, err = e0.Campaign(ctx)
	assert.EqualError(t, err, "leader: already campaigning or leading: "+path)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = e1.Campaign(tctx)
	cancel()
	assert.EqualError(t, err, "leader: campaign "+path+": context deadline exceeded")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = e0.Resign(cctx)
	assert.EqualError(t, err, "leader: resign "+path+": "+lock.ErrReleasePending.Error()+": conn: delete "+l.Path()+": context canceled")
	assert.ErrorIs(t, err, lock.ErrReleasePending)
	assert.ErrorIs(t, err, context.Canceled)
}

// Run with a nil function is a clear error before anything is queued: it
// would otherwise panic while leading and leave its node leading until the
// session ends.
func TestRunNilFunction(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "election")
	e := newElection(t, s, path, "a")
	ctx := testzk.Ctx(t, 10*time.Second)
	var err error
	require.NotPanics(t, func() { err = e.Run(ctx, nil) })
	assert.EqualError(t, err, "leader: run "+path+": nil function: conn: invalid argument")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.Empty(t, testzk.Children(t, s, path), "nothing queued")
	assert.ErrorIs(t, e.Resign(ctx), lock.ErrNotHeld, "not leading")
}

// Resign deletes our node plainly, without the locks' handover mark (a
// data change in the deleting transaction): a watcher of the leader's node,
// as Curator's LeaderLatch follower is, sees its deletion first.
func TestResignIsAPlainDelete(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "election")
	e := newElection(t, ss[0], path, "a")
	ctx := testzk.Ctx(t, 30*time.Second)
	l, err := e.Campaign(ctx)
	require.NoError(t, err)
	_, _, w, err := connlink.Of(testzk.Epoch(t, ss[1])).GetW(ctx, l.Path())
	require.NoError(t, err)
	require.NoError(t, e.Resign(ctx))
	select {
	case ev := <-w:
		assert.Equal(t, zk.EventNodeDeleted, ev.Type, "the follower's one-shot watch sees %v", ev.Type)
	case <-ctx.Done():
		t.Fatal("no event on the leader's node")
	}
}
