package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestHolderSessionExpired: the server expires the holder's session; the
// holder learns it (Lost), a waiter acquires, and the old holder can no
// longer write under the lock.
func TestHolderSessionExpired(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	data := path + "-data"
	hs := testzk.Connect(t, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	ws := testzk.Connect(t, c.Servers())
	holder, waiter := newMutex(t, hs, path), newMutex(t, ws, path)
	ctx := testzk.Ctx(t, time.Minute)
	require.NoError(t, testzk.Epoch(t, ws).CreateParents(ctx, data))
	_, err := testzk.Epoch(t, ws).Create(ctx, data, nil, 0, ws.ACL())
	require.NoError(t, err)

	l, err := holder.Acquire(ctx)
	require.NoError(t, err)
	lost := l.Lost()
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("holder"), Version: -1})
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(ctx)
		got <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, ws, path)) == 2 }, "waiter queued")

	ep := l.Epoch()
	require.NoError(t, zktest.ExpireSession(ctx, c.Servers()[0], ep.SessionID(), ep.SessionPassword()))
	select {
	case <-lost:
	case <-time.After(20 * time.Second):
		t.Fatal("the holder was not told")
	}
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
	select {
	case err := <-got:
		require.NoError(t, err, "the waiter acquires")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not acquire")
	}
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("stale"), Version: -1})
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	_, err = holder.Acquire(ctx)
	assert.ErrorIs(t, err, conn.ErrLeaseLost, "re-entering a lost lease is refused")
	require.NoError(t, holder.Release(ctx), "releasing a lost lease")
	assert.False(t, holder.IsAcquiredInThisProcess())

	// The waiter's goroutine is gone; it held the lock in it. Its session
	// closing releases it.
	require.NoError(t, ws.Close())
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, hs, path)) == 0 }, "waiter's node gone with its session")
	b, _, err := testzk.Epoch(t, hs).Get(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, "holder", string(b))
}

// TestWaiterSessionExpired: a waiter whose session ends starts over in the
// next one and acquires when the holder releases, leaving nothing behind.
func TestWaiterSessionExpired(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	hs := testzk.Connect(t, c.Servers())
	ws := testzk.Connect(t, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	holder, waiter := newMutex(t, hs, path), newMutex(t, ws, path)
	ctx := testzk.Ctx(t, time.Minute)
	_, err := holder.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan error, 2)
	go func() {
		l, err := waiter.Acquire(ctx)
		got <- err
		if err == nil {
			if l.Err() != nil {
				got <- l.Err()
				return
			}
			got <- waiter.Release(ctx)
		}
	}()
	testzk.Watching(t, ws, 0)
	ep := testzk.Epoch(t, ws)
	require.NoError(t, zktest.ExpireSession(ctx, c.Servers()[0], ep.SessionID(), ep.SessionPassword()))
	testzk.Eventually(t, 20*time.Second, func() bool {
		e, err := ws.Epoch(ctx)
		return err == nil && e != ep && len(testzk.Children(t, hs, path)) == 2
	}, "waiter queued again in a new session")
	select {
	case err := <-got:
		t.Fatalf("waiter returned while the lock is held: %v", err)
	default:
	}
	require.NoError(t, holder.Release(ctx))
	require.NoError(t, <-got)
	require.NoError(t, <-got)
	assert.Empty(t, testzk.Children(t, hs, path))
}

// TestLostCreateAnswer: the answer to our create is lost with the
// connection (the server applied it). The mutex finds its node by its id:
// one node, no orphan, and the lock is ours.
func TestLostCreateAnswer(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	obs := testzk.Connect(t, c.Servers())
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	_, err := m.Acquire(ctx) // makes the lock path, so the next acquire is one create
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))

	syncs := s.Stats().Requests[conn.OpSync]
	p.CutAfterNextWrite()
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.Greater(t, s.Stats().Requests[conn.OpSync], syncs, "the create's answer was lost and the node looked for")
	names := testzk.Children(t, obs, path)
	require.Len(t, names, 1, "no orphan")
	assert.Equal(t, path+"/"+names[0], l.Path())
	require.NoError(t, m.Release(ctx))
	assert.Empty(t, testzk.Children(t, obs, path))
}

// TestLostCreateAnswerWhileQueued: the same while another holds the lock:
// we do not queue behind our own node.
func TestLostCreateAnswerWhileQueued(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	hs := testzk.Connect(t, c.Servers())
	holder, m := newMutex(t, hs, path), newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	_, err := holder.Acquire(ctx)
	require.NoError(t, err)

	p.CutAfterNextWrite()
	got := make(chan error, 2)
	go func() {
		_, err := m.Acquire(ctx)
		got <- err
		if err == nil {
			got <- m.Release(ctx)
		}
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, hs, path)) == 2 }, "queued")
	select {
	case err := <-got:
		t.Fatalf("acquired while held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	assert.Len(t, testzk.Children(t, hs, path), 2, "one node of ours")
	require.NoError(t, holder.Release(ctx))
	require.NoError(t, <-got)
	require.NoError(t, <-got)
	assert.Empty(t, testzk.Children(t, hs, path))
}

// TestCancelDuringCreate: ctx ends while the create is on the wire; the
// node it makes is deleted before Acquire returns.
func TestCancelDuringCreate(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	obs := testzk.Connect(t, c.Servers())
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	_, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))

	p.SetLatency(300 * time.Millisecond)
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = m.Acquire(tctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, testzk.Children(t, obs, path), "no orphan")
	assert.False(t, m.IsAcquiredInThisProcess())
	p.SetLatency(0)
}

// TestReleaseWithConnectionCut: a release whose delete cannot be confirmed
// is not reported as done, and the node goes once the connection is back.
func TestReleaseWithConnectionCut(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	obs := testzk.Connect(t, c.Servers())
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)

	p.Blackhole()
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = m.Release(rctx)
	assert.ErrorIs(t, err, mutex.ErrReleasePending)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, m.IsAcquiredInThisProcess(), "the caller no longer holds it")
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "no guarded write after release")
	assert.Len(t, testzk.Children(t, obs, path), 1, "the node is still there")

	p.Heal()
	testzk.Eventually(t, 20*time.Second, func() bool { return len(testzk.Children(t, obs, path)) == 0 }, "pending delete done")
	assert.NoError(t, testzk.Epoch(t, s).Err(), "within the same session")
}

func TestForeignChildren(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	ep := testzk.Epoch(t, s)
	require.NoError(t, ep.CreateParents(ctx, path+"/x"))
	hex := "9f86d081884c7d659a2feaa0c55ad015"
	for _, n := range []string{"hello", "lock-0000000001"} { // ignored
		_, err := ep.Create(ctx, path+"/"+n, nil, 0, s.ACL())
		require.NoError(t, err)
	}
	kazoo, err := ep.Create(ctx, path+"/"+hex+"__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, s.ACL())
	require.NoError(t, err)
	gozk, err := ep.Create(ctx, path+"/_c_"+hex+"-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, s.ACL())
	require.NoError(t, err)

	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, []string{kazoo, gozk}, []string{ps[0].Node, ps[1].Node})
	assert.Equal(t, hex, ps[0].ID)

	_, ok, err := m.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "kazoo's and go-zookeeper's nodes hold the lock")
	require.NoError(t, ep.Delete(ctx, kazoo, -1))
	require.NoError(t, ep.Delete(ctx, gozk, -1))
	_, ok, err = m.TryAcquire(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "the names that are no contenders do not count")
	require.NoError(t, m.Release(ctx))
	assert.ElementsMatch(t, []string{"hello", "lock-0000000001"}, testzk.Children(t, s, path))
}

// TestParentReaped: the lock path disappears between acquires (ZooKeeper
// reaps empty containers); the next acquire makes it again.
func TestParentReaped(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	for i := 0; i < 3; i++ {
		_, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, m.Release(ctx))
		require.NoError(t, testzk.Epoch(t, s).Delete(ctx, path, -1), "round %d", i)
	}
	ok, st, err := testzk.Epoch(t, s).Exists(ctx, conn.ParentPath(path))
	require.NoError(t, err)
	require.True(t, ok)
	assert.NotZero(t, st.EphemeralOwner == 0, "parents are plain containers")
}

// TestCutBetweenCreateAndChildren: the connection is cut once the create is
// on its way, losing the answer of the create or of the listing that
// follows, whichever the cut catches. Either way: one node, ours, and no
// orphan after the release.
func TestCutBetweenCreateAndChildren(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	obs := testzk.Connect(t, c.Servers())
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	_, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))

	p.SetLatency(50 * time.Millisecond)
	creates := s.Stats().Requests[conn.OpCreate]
	got := make(chan error, 2)
	release := make(chan struct{})
	go func() { // the acquiring goroutine owns the mutex and releases it
		_, err := m.Acquire(ctx)
		got <- err
		if err == nil {
			<-release
			got <- m.Release(ctx)
		}
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return s.Stats().Requests[conn.OpCreate] > creates }, "create sent")
	p.CutAfterNextWrite()
	require.NoError(t, <-got)
	p.SetLatency(0)
	assert.Len(t, testzk.Children(t, obs, path), 1, "one node")
	close(release)
	require.NoError(t, <-got)
	assert.Empty(t, testzk.Children(t, obs, path), "no orphan")
}
