package rwlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestDowngradeWithWriterQueued: write, read, release write, with another
// writer queued behind our write node. Our read node sorts after that
// writer, so our write node is kept: the writer does not get in while we
// read, and gets in after our read release. An upgrade attempt in between
// fails at once.
func TestDowngradeWithWriterQueued(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	as, bs, obs := testzk.Connect(t, c.Servers()), testzk.Connect(t, c.Servers()), testzk.Connect(t, c.Servers())
	a, b := newRW(t, as, path), newRW(t, bs, path)
	ctx := testzk.Ctx(t, time.Minute)

	wl, err := a.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	gets := testzk.WatchesSet(bs)
	cb := start(ctx, b.WriteLock())
	testzk.Watching(t, bs, gets)

	begin := time.Now()
	rl, err := a.ReadLock().Acquire(ctx)
	require.NoError(t, err, "the read lock is granted under our own write lock")
	assert.Less(t, time.Since(begin), 2*time.Second)
	assert.Len(t, testzk.Children(t, obs, path), 3, "our W, the queued writer's W, our real R node")
	assert.NotEqual(t, wl.Path(), rl.Path())
	assert.True(t, a.WriteLock().IsOwnedByCurrentGoroutine())
	assert.True(t, a.ReadLock().IsOwnedByCurrentGoroutine())

	bEvents := events(bs)
	require.NoError(t, a.WriteLock().Release(ctx))
	assert.False(t, a.WriteLock().IsOwnedByCurrentGoroutine())
	assert.True(t, a.ReadLock().IsOwnedByCurrentGoroutine(), "still holds the read lock")
	assert.ErrorIs(t, wl.Err(), conn.ErrLeaseLost, "the write lease is released")
	assert.NoError(t, rl.Err())
	settled(t, bs, path)
	assert.Equal(t, bEvents, events(bs), "the queued writer was not woken")
	assert.False(t, cb.holds(), "the queued writer got in while we hold the read lock")
	assert.Contains(t, testzk.Children(t, obs, path), zkpath.Base(wl.Path()), "our write node is kept while we read")

	before := testzk.Requests(as)
	_, err = a.WriteLock().Acquire(ctx)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade, "write again while holding only the read lock")
	assert.Equal(t, before, testzk.Requests(as))

	// Re-entry of the read lock still works and costs nothing.
	rl2, err := a.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	assert.Same(t, rl, rl2)
	require.NoError(t, a.ReadLock().Release(ctx))
	assert.False(t, cb.holds())

	require.NoError(t, a.ReadLock().Release(ctx))
	cb.wait(t, 10*time.Second, "queued writer")
	assert.Len(t, testzk.Children(t, obs, path), 1, "only the writer's node is left")
	cb.done(t, "queued writer")
	assert.Empty(t, testzk.Children(t, obs, path))
	assert.ErrorIs(t, a.ReadLock().Release(ctx), lock.ErrNotHeld)
	assert.ErrorIs(t, a.WriteLock().Release(ctx), lock.ErrNotHeld)
}

// TestDowngradeLetsReadersIn: with only a reader queued behind our write
// node, releasing the write lock after taking the read lock deletes the
// write node: the reader joins us. A writer that queues afterwards waits
// for both readers.
func TestDowngradeLetsReadersIn(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	as, rs, ws := testzk.Connect(t, c.Servers()), testzk.Connect(t, c.Servers()), testzk.Connect(t, c.Servers())
	a := newRW(t, as, path)
	ctx := testzk.Ctx(t, time.Minute)

	_, err := a.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	gets := testzk.WatchesSet(rs)
	cr := start(ctx, newRW(t, rs, path).ReadLock())
	testzk.Watching(t, rs, gets)
	_, err = a.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	assert.False(t, cr.holds(), "the reader waits for our write lock")

	require.NoError(t, a.WriteLock().Release(ctx))
	cr.wait(t, 10*time.Second, "queued reader")
	assert.Len(t, testzk.Children(t, as, path), 2, "our read node and the other reader's")
	assert.True(t, a.ReadLock().IsOwnedByCurrentGoroutine())

	gets = testzk.WatchesSet(ws)
	cw := start(ctx, newRW(t, ws, path).WriteLock())
	testzk.Watching(t, ws, gets)
	require.NoError(t, a.ReadLock().Release(ctx))
	settled(t, ws, path)
	assert.False(t, cw.holds(), "the writer waits for the other reader")
	cr.done(t, "queued reader")
	cw.wait(t, 10*time.Second, "writer")
	cw.done(t, "writer")
	assert.Empty(t, testzk.Children(t, as, path))
}

// TestDowngradeReleaseReadFirst: write, read, release read, release write:
// plain nesting, nothing kept.
func TestDowngradeReleaseReadFirst(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	s := testzk.Connect(t, c.Servers())
	a := newRW(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	for range 2 {
		_, err := a.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		_, err = a.ReadLock().Acquire(ctx)
		require.NoError(t, err)
		_, err = a.WriteLock().Acquire(ctx) // re-entering the write lock is no upgrade
		require.NoError(t, err)
		require.NoError(t, a.WriteLock().Release(ctx))
		require.NoError(t, a.ReadLock().Release(ctx))
		assert.Len(t, testzk.Children(t, s, path), 1)
		assert.True(t, a.WriteLock().IsOwnedByCurrentGoroutine())
		require.NoError(t, a.WriteLock().Release(ctx))
		assert.Empty(t, testzk.Children(t, s, path))
	}
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
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
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
