package semaphoremutex_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestMutexReleaseFromAnotherGoroutine: the handle owns the lock, not the
// goroutine that took it.
func TestMutexReleaseFromAnotherGoroutine(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "sem")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.NoError(t, l.Err(), "held")

	done := make(chan error, 1)
	go func() { done <- m.Release(ctx) }()
	require.NoError(t, <-done)
	assert.ErrorIs(t, m.Release(ctx), lock.ErrNotHeld)
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "released")
	assert.Empty(t, ephemerals(t, s, path))
}

// TestMutexNotReentrant: a second Acquire on a held handle waits for the
// release, bounded by its context, and asks nothing of ZooKeeper while it
// waits; TryAcquire on a held handle says no at once.
func TestMutexNotReentrant(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "sem")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	first, err := m.Acquire(ctx)
	require.NoError(t, err)

	reqs := connlink.Of(s).Stats().TotalRequests()
	l, ok, err := m.TryAcquire(ctx)
	assert.NoError(t, err)
	assert.False(t, ok, "TryAcquire on a held handle")
	assert.Nil(t, l)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	l, err = m.Acquire(short)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a second Acquire times out while held")
	assert.Nil(t, l)
	assert.Equal(t, reqs, connlink.Of(s).Stats().TotalRequests(), "the handle's own waiters do not ask ZooKeeper")
	assert.NoError(t, first.Err(), "still held")

	r := acquireAsync(ctx, m.Acquire)
	select {
	case got := <-r:
		t.Fatalf("second Acquire returned while held: %+v", got)
	case <-time.After(100 * time.Millisecond):
	}
	assert.Equal(t, reqs, connlink.Of(s).Stats().TotalRequests(), "still waiting locally")
	require.NoError(t, m.Release(ctx))
	got := await(t, r, 10*time.Second, "second Acquire after the release")
	require.NoError(t, got.err)
	assert.NotEqual(t, first.Path(), got.lease.Path(), "a new lease")
	assert.ErrorIs(t, first.Err(), conn.ErrLeaseLost)
	require.NoError(t, m.Release(ctx))
	assert.Empty(t, ephemerals(t, s, path))
}

// TestMutexReleaseNotHeld: Release without a hold is an error and changes
// nothing.
func TestMutexReleaseNotHeld(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "sem")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	err := m.Release(ctx)
	assert.ErrorIs(t, err, lock.ErrNotHeld)
	assert.Contains(t, err.Error(), path)
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	assert.ErrorIs(t, m.Release(ctx), lock.ErrNotHeld, "released twice")
	_, err = m.Acquire(ctx)
	require.NoError(t, err, "the handle works after a refused release")
	require.NoError(t, m.Release(ctx))
}

// TestMutexNothingLeft: the mutex's lease is its internal lock node (a
// one-lease semaphore creates no lease node); after a release nothing is
// left, and an uncontended acquire and release cost four requests.
func TestMutexNothingLeft(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "sem")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.Empty(t, testzk.Children(t, s, path+"/leases"), "no lease node")
	locks := testzk.Children(t, s, path+"/locks")
	require.Len(t, locks, 1, "our internal lock node")
	assert.Equal(t, path+"/locks/"+locks[0], l.Path(), "is the lease")
	require.NoError(t, m.Release(ctx))
	assert.Empty(t, testzk.Children(t, s, path+"/leases"))
	assert.Empty(t, testzk.Children(t, s, path+"/locks"))
	assert.Empty(t, ephemerals(t, s, path))

	before := connlink.Of(s).Stats()
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	d := connlink.Of(s).Stats().Sub(before)
	t.Logf("uncontended acquire and release: %v", d.Requests)
	// lock create + lock children + lease children (none: leases/ does not
	// exist) + our lock node's czxid and the semaphore node's pzxid (no
	// lease granted since we queued: keep the lock node as the lease) +
	// release (handover transaction).
	assert.EqualValues(t, 6, d.TotalRequests())
	assert.EqualValues(t, 2, d.Requests[metrics.OpChildren])
	assert.EqualValues(t, 2, d.Requests[metrics.OpExists])
	assert.EqualValues(t, 1, d.Requests[metrics.OpMulti])
}

// TestMutexHandoff: a waiter handed the internal lock by a holder of the
// mutex knows that no lease node exists: it takes the mutex with no
// listing of the leases and no request after the notification. Its whole
// acquire is three requests: create, list the internal lock, watch the
// holder's node.
func TestMutexHandoff(t *testing.T) {
	c := testzk.Shared(t)
	sessions := testzk.ConnectN(t, c.Servers(), 2)
	hs, ws := sessions[0], sessions[1]
	path := testzk.Path(t, c, "sem")
	holder, waiter := newMutex(t, hs, path), newMutex(t, ws, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	_, err := holder.Acquire(ctx)
	require.NoError(t, err)

	before := connlink.Of(ws).Stats()
	r := acquireAsync(ctx, waiter.Acquire)
	testzk.Watching(t, ws, before.WatchesSet)
	require.NoError(t, holder.Release(ctx))
	got := await(t, r, 10*time.Second, "waiter")
	require.NoError(t, got.err)
	d := connlink.Of(ws).Stats().Sub(before)
	t.Logf("waiter's acquire: %v", d.Requests)
	assert.EqualValues(t, 4, d.TotalRequests(), "create, children, getW, getACL")
	assert.EqualValues(t, 1, d.Requests[metrics.OpChildren], "the leases are not listed")
	require.NoError(t, waiter.Release(ctx))
	assert.Empty(t, ephemerals(t, hs, path))
}

// An acquire that times out says "semaphoremutex: acquire PATH" once,
// whether it went through the Semaphore, a Mutex, or a Mutex with local
// handoff (whose Contender calls the Semaphore).
func TestAcquireErrorNamesTheLockOnce(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	holder := testzk.Connect(t, c.Servers())
	s := testzk.Connect(t, c.Servers())
	ctx := testzk.Ctx(t, 30*time.Second)
	hm := newMutex(t, holder, path)
	_, err := hm.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hm.Release(context.Background()) })

	sem, err := semaphoremutex.NewSemaphore(s, path, 1)
	require.NoError(t, err)
	shared, err := semaphoremutex.New(s, path, lock.WithLocalHandoff(4, 0))
	require.NoError(t, err)
	acquires := map[string]func(context.Context) error{
		"Semaphore.Acquire": func(ctx context.Context) error { _, err := sem.Acquire(ctx); return err },
		"Mutex.Acquire":     func(ctx context.Context) error { _, err := newMutex(t, s, path).Acquire(ctx); return err },
		"Mutex.Acquire with local handoff": func(ctx context.Context) error {
			_, err := shared.Acquire(ctx)
			return err
		},
	}
	for name, acquire := range acquires {
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := acquire(wctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		assert.Equal(t, 1, strings.Count(err.Error(), "semaphoremutex: acquire "+path), "%s: %v", name, err)
	}
}
