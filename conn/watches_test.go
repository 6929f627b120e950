package conn_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A watcher that stops waiting has its watch removed from the server
// (removeWatches), with the session open and the node unchanged; a second
// stop, or a stop after the watch fired, costs nothing.
func TestUnwatchRemovesServerWatch(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers())
	ep := epoch(t, s)
	ctx := testzk.Ctx(t, 30*time.Second)
	path := c.Root() + "/unwatch"
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, path))
	_, err := s.Create(ctx, path, nil, zk.FlagPersistent, connlink.Of(s).ACL())
	require.NoError(t, err)
	baseline := testzk.WatchCount(t, c)

	_, _, ch, err := connlink.Of(ep).GetW(ctx, path)
	require.NoError(t, err)
	_, _, cw, err := connlink.Of(ep).ChildrenW(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, []string{path}, testzk.DataWatches(t, c, ep.SessionID()))
	assert.Equal(t, baseline+2, testzk.WatchCount(t, c))

	sent := conn.WatchesRemoved(s)
	require.NoError(t, connlink.Of(ep).Unwatch(ctx, ch))
	assert.Empty(t, testzk.DataWatches(t, c, ep.SessionID()), "the data watch is gone")
	require.NoError(t, connlink.Of(ep).Unwatch(ctx, cw))
	assert.Equal(t, baseline, testzk.WatchCount(t, c), "the child watch is gone")
	assert.Equal(t, sent+2, conn.WatchesRemoved(s), "one removeWatches each")
	require.NoError(t, connlink.Of(ep).Unwatch(ctx, ch), "again: nothing to do")
	assert.Equal(t, sent+2, conn.WatchesRemoved(s))

	// A fired watch: nothing to remove, no request.
	_, _, ch, err = connlink.Of(ep).GetW(ctx, path)
	require.NoError(t, err)
	_, err = s.Set(ctx, path, []byte("x"), -1)
	require.NoError(t, err)
	ev := <-ch
	assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
	require.NoError(t, connlink.Of(ep).Unwatch(ctx, ch))
	assert.Equal(t, sent+2, conn.WatchesRemoved(s))
	assert.Equal(t, baseline, testzk.WatchCount(t, c))
}

// Two watchers of one session on one path share the server's watch: the
// first to stop leaves it, and the other is still woken; the last one to
// stop removes it. A reconnect after a removal does not bring the watch
// back (go-zookeeper re-sends it in set-watches; conn leaves it out),
// while a watch still waited on is set again and fires.
func TestUnwatchSharedAndReconnect(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(10*time.Second))
	ep := epoch(t, s)
	ctx := testzk.Ctx(t, 60*time.Second)
	a, b := c.Root()+"/a", c.Root()+"/b"
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, a))
	for _, n := range []string{a, b} {
		_, err := connlink.Of(ep).Create(ctx, n, nil, zk.FlagPersistent, connlink.Of(s).ACL())
		require.NoError(t, err)
	}
	sid := ep.SessionID()

	_, _, w1, err := connlink.Of(ep).GetW(ctx, a)
	require.NoError(t, err)
	_, _, w2, err := connlink.Of(ep).ExistsW(ctx, a)
	require.NoError(t, err)
	require.NoError(t, connlink.Of(ep).Unwatch(ctx, w1))
	assert.Equal(t, []string{a}, testzk.DataWatches(t, c, sid), "the other watcher still waits")
	_, err = connlink.Of(ep).Set(ctx, a, []byte("1"), -1)
	require.NoError(t, err)
	select {
	case ev := <-w2:
		assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
	case <-time.After(10 * time.Second):
		t.Fatal("the remaining watcher was not woken")
	}

	// Removed, then a reconnect: the watch stays gone. b's watch, still
	// waited on, comes back and fires.
	_, _, wa, err := connlink.Of(ep).GetW(ctx, a)
	require.NoError(t, err)
	_, _, wb, err := connlink.Of(ep).GetW(ctx, b)
	require.NoError(t, err)
	require.NoError(t, connlink.Of(ep).Unwatch(ctx, wa))
	assert.Equal(t, []string{b}, testzk.DataWatches(t, c, sid))
	sw := conn.SetWatchesSent(s)
	p.Cut()
	p.Heal()
	testzk.Eventually(t, 20*time.Second, func() bool { return conn.SetWatchesSent(s) > sw }, "set-watches re-sent")
	testzk.Eventually(t, 10*time.Second, func() bool {
		w := testzk.DataWatches(t, c, sid)
		return len(w) == 1 && w[0] == b
	}, "b's watch back, a's not")
	assert.Equal(t, sid, epoch(t, s).SessionID(), "the same session")
	_, err = connlink.Of(ep).Set(ctx, b, []byte("1"), -1)
	require.NoError(t, err)
	select {
	case ev := <-wb:
		assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
	case <-time.After(10 * time.Second):
		t.Fatal("b's watcher was not woken after the reconnect")
	}
	assert.Empty(t, testzk.DataWatches(t, c, sid))
}

// A lease lost at a Suspended (WithSuspendedAsLost) while its node lives
// leaves no watch on it once the same session is back (before, the
// set-watches of the reconnect set it again); a lease lost with its epoch
// (expiry) leaves none of either session once the next epoch is open.
func TestLostLeaseLeavesNoWatch(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(10*time.Second), conn.WithSuspendedAsLost())
	ep := epoch(t, s)
	ctx := testzk.Ctx(t, 60*time.Second)
	root := c.Root() + "/lease"
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, root+"/n"))
	node, err := connlink.Of(ep).Create(ctx, root+"/n", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	sid := ep.SessionID()
	l := ep.NewLease(node)
	before := testzk.WatchesSet(s)
	lost := l.Lost()
	testzk.Watching(t, s, before)
	require.Equal(t, []string{node}, testzk.DataWatches(t, c, sid))

	sw := conn.SetWatchesSent(s)
	p.Cut()
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not lost at the Suspended")
	}
	p.Heal()
	testzk.Eventually(t, 20*time.Second, func() bool {
		e, err := connlink.Of(s).Epoch(ctx)
		return err == nil && e == ep && conn.SetWatchesSent(s) > sw
	}, "the same session back")
	ok, _, err := connlink.Of(ep).Exists(ctx, node)
	require.NoError(t, err)
	require.True(t, ok, "our node lives")
	assert.Empty(t, testzk.DataWatches(t, c, sid), "no watch on our node")

	// Lost with the epoch.
	s2 := connect(t, c.Servers())
	ep2 := epoch(t, s2)
	node2, err := connlink.Of(ep2).Create(ctx, root+"/m", nil, zk.FlagEphemeral, connlink.Of(s2).ACL())
	require.NoError(t, err)
	l2 := ep2.NewLease(node2)
	before = testzk.WatchesSet(s2)
	lost = l2.Lost()
	testzk.Watching(t, s2, before)
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep2))
	<-lost
	next := epoch(t, s2)
	assert.Empty(t, testzk.DataWatches(t, c, ep2.SessionID()))
	assert.Empty(t, testzk.DataWatches(t, c, next.SessionID()))
}
