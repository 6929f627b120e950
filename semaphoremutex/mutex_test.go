package semaphoremutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
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
	assert.True(t, m.IsAcquired())

	done := make(chan error, 1)
	go func() { done <- m.Release(ctx) }()
	require.NoError(t, <-done)
	assert.False(t, m.IsAcquired())
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

	reqs := s.Stats().TotalRequests()
	l, ok, err := m.TryAcquire(ctx)
	assert.NoError(t, err)
	assert.False(t, ok, "TryAcquire on a held handle")
	assert.Nil(t, l)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	l, err = m.Acquire(short)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a second Acquire times out while held")
	assert.Nil(t, l)
	assert.Equal(t, reqs, s.Stats().TotalRequests(), "the handle's own waiters do not ask ZooKeeper")
	assert.NoError(t, first.Err(), "still held")

	r := acquireAsync(ctx, m.Acquire)
	select {
	case got := <-r:
		t.Fatalf("second Acquire returned while held: %+v", got)
	case <-time.After(100 * time.Millisecond):
	}
	assert.Equal(t, reqs, s.Stats().TotalRequests(), "still waiting locally")
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
	assert.ErrorIs(t, err, semaphoremutex.ErrNotHeld)
	assert.Contains(t, err.Error(), path)
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	assert.ErrorIs(t, m.Release(ctx), semaphoremutex.ErrNotHeld, "released twice")
	_, err = m.Acquire(ctx)
	require.NoError(t, err, "the handle works after a refused release")
	require.NoError(t, m.Release(ctx))
}

// TestMutexNothingLeft: after a release neither the lease node nor the
// internal lock node is left, and an uncontended acquire and release cost
// five requests.
func TestMutexNothingLeft(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "sem")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	_, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.Len(t, testzk.Children(t, s, path+"/leases"), 1, "the lease node")
	assert.Empty(t, testzk.Children(t, s, path+"/locks"), "the internal lock is released on acquire")
	require.NoError(t, m.Release(ctx))
	assert.Empty(t, testzk.Children(t, s, path+"/leases"))
	assert.Empty(t, testzk.Children(t, s, path+"/locks"))
	assert.Empty(t, ephemerals(t, s, path))

	before := s.Stats()
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	d := s.Stats().Sub(before)
	t.Logf("uncontended acquire and release: %v", d.Requests)
	// lock create + lock children + lease children + multi (lease create,
	// lock delete) + lease delete.
	assert.EqualValues(t, 5, d.TotalRequests())
}
