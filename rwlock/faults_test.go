package rwlock_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestLostCreateAnswer: the answer to our create is lost with the
// connection (the server applied it). The node's name does not carry the
// acquire id, so it is found again by its data: one node, no orphan, and
// the lock is ours; after the release nothing is left.
func TestLostCreateAnswer(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	obs := testzk.Connect(t, c.Servers())
	rw := newRW(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	_, err := rw.WriteLock().Acquire(ctx) // makes the lock path, so the next acquire is one create
	require.NoError(t, err)
	require.NoError(t, rw.WriteLock().Release(ctx))

	for _, lk := range []*rwlock.Lock{rw.ReadLock(), rw.WriteLock()} {
		syncs, gets := s.Stats().Requests[conn.OpSync], s.Stats().Requests[conn.OpGet]
		p.CutAfterNextWrite()
		l, err := lk.Acquire(ctx)
		require.NoError(t, err, "%v", lk)
		st := s.Stats()
		assert.Greater(t, st.Requests[conn.OpSync], syncs, "%v: the create's answer was lost and the node looked for", lk)
		assert.Greater(t, st.Requests[conn.OpGet], gets, "%v: found by the id in its data", lk)
		names := testzk.Children(t, obs, path)
		require.Len(t, names, 1, "%v: no orphan", lk)
		assert.Equal(t, path+"/"+names[0], l.Path())
		require.NoError(t, lk.Release(ctx))
		assert.Empty(t, testzk.Children(t, obs, path), "%v: nothing left after release", lk)
	}
}

// TestLostCreateAnswerWhileQueued: the same while another process holds
// the write lock under the same host name: its node has our prefix but
// not our id, and we do not take it for ours; nor do we queue behind our
// own node.
func TestLostCreateAnswerWhileQueued(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	hs := testzk.Connect(t, c.Servers())
	holder, rw := newRW(t, hs, path, rwlock.WithHost("same")), newRW(t, s, path, rwlock.WithHost("same"))
	ctx := testzk.Ctx(t, time.Minute)
	_, err := holder.WriteLock().Acquire(ctx)
	require.NoError(t, err)

	for _, lk := range []*rwlock.Lock{rw.WriteLock(), rw.ReadLock()} {
		gets, syncs := testzk.GetWs(s), s.Stats().Requests[conn.OpSync]
		p.CutAfterNextWrite()
		cw := start(ctx, lk)
		testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, hs, path)) == 2 }, "%v queued", lk)
		testzk.WatchingAnswered(t, s, gets)
		assert.Greater(t, s.Stats().Requests[conn.OpSync], syncs, "%v: the create's answer was lost", lk)
		assert.False(t, cw.holds(), "%v acquired while the holder holds", lk)
		assert.Len(t, testzk.Children(t, hs, path), 2, "%v: one node of ours", lk)
		require.NoError(t, holder.WriteLock().Release(ctx))
		cw.wait(t, 10*time.Second, lk.String())
		_, ok, err := holder.WriteLock().TryAcquire(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "%v holds", lk)
		cw.done(t, lk.String())
		_, err = holder.WriteLock().Acquire(ctx)
		require.NoError(t, err)
	}
	require.NoError(t, holder.WriteLock().Release(ctx))
	assert.Empty(t, testzk.Children(t, hs, path))
}

// TestReaderSessionExpired: the server expires a reader's session; the
// reader learns it (Lost), its guarded write is refused, a queued writer
// gets in with a greater fencing token.
func TestReaderSessionExpired(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	data := path + "-data"
	rs := testzk.Connect(t, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	ws := testzk.Connect(t, c.Servers())
	r, w := newRW(t, rs, path), newRW(t, ws, path)
	ctx := testzk.Ctx(t, time.Minute)
	require.NoError(t, testzk.Epoch(t, ws).CreateParents(ctx, data))
	_, err := testzk.Epoch(t, ws).Create(ctx, data, nil, 0, ws.ACL())
	require.NoError(t, err)

	l, err := r.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	rtok, err := l.Token(ctx)
	require.NoError(t, err)
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("reader"), Version: -1})
	require.NoError(t, err)
	gets := testzk.GetWs(ws)
	cw := start(ctx, w.WriteLock())
	testzk.WatchingAnswered(t, ws, gets)

	ep := l.Epoch()
	require.NoError(t, zktest.ExpireSession(ctx, c.Servers()[0], ep.SessionID(), ep.SessionPassword()))
	// Err is polled rather than Lost armed before the expiry (see mutex's
	// TestHolderSessionExpired: an armed Lost has a request in flight when
	// the epoch ends).
	testzk.Eventually(t, 20*time.Second, func() bool { return l.Err() != nil }, "the reader was not told")
	<-l.Lost()
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
	wl := cw.wait(t, 10*time.Second, "writer").lease
	wtok, err := wl.Token(ctx)
	require.NoError(t, err)
	assert.Greater(t, wtok, rtok, "fencing tokens grow")
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: data, Data: []byte("stale"), Version: -1})
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	_, err = r.ReadLock().Acquire(ctx)
	assert.ErrorIs(t, err, conn.ErrLeaseLost, "re-entering a lost lease is refused")
	require.NoError(t, r.ReadLock().Release(ctx), "releasing a lost lease")
	assert.False(t, r.ReadLock().IsAcquiredInThisProcess())
	cw.done(t, "writer")
	b, _, err := testzk.Epoch(t, ws).Get(ctx, data)
	require.NoError(t, err)
	assert.Equal(t, "reader", string(b))
	assert.Empty(t, testzk.Children(t, ws, path))
}

// TestDowngradeOnLostWriteLease: a goroutine whose write lease was lost
// (session expired) cannot take the read lock by the downgrade shortcut.
func TestDowngradeOnLostWriteLease(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	s := testzk.Connect(t, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	obs := testzk.Connect(t, c.Servers())
	rw := newRW(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	l, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	ep := l.Epoch()
	require.NoError(t, zktest.ExpireSession(ctx, c.Servers()[0], ep.SessionID(), ep.SessionPassword()))
	testzk.Eventually(t, 20*time.Second, func() bool { return l.Err() != nil }, "the writer was not told")
	_, err = rw.ReadLock().Acquire(ctx)
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	assert.False(t, rw.ReadLock().IsOwnedByCurrentGoroutine())
	require.NoError(t, rw.WriteLock().Release(ctx))
	_, err = rw.ReadLock().Acquire(ctx)
	require.NoError(t, err, "a plain read acquire in the new session")
	require.NoError(t, rw.ReadLock().Release(ctx))
	assert.Empty(t, testzk.Children(t, obs, path))
}
