package locktest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/lock"
)

// testCancelledBefore: with ctx already ended, Acquire and TryAcquire fail
// with ctx's error and leave nothing.
func (s *suite) testCancelledBefore(t *testing.T) {
	path := UniquePath(s.cluster, "cancelled")
	sess := Connect(t, s.cluster.Servers(), s.cfg.sessionTimeout)
	lk := s.newLock(t, sess, path)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := lk.Acquire(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, l)
	l, ok, err := lk.TryAcquire(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, ok)
	assert.Nil(t, l)
	assert.Empty(t, ephemeralsOrFail(t, sess, path), "nothing created with a cancelled ctx")

	lease := mustAcquire(t, lk, 10*time.Second)
	assert.NotNil(t, lease)
	mustRelease(t, lk, 10*time.Second)
}

// testAbandonWhileQueued: a waiter whose deadline passes (or whose ctx is
// cancelled) while another (the rival) holds gets ctx's error promptly,
// and its node is deleted (before Acquire returns, or in the background if
// that takes longer than its grace); it holds nothing, its
// TryAcquire says no while the other holds, and afterwards it acquires
// normally.
func (s *suite) testAbandonWhileQueued(t *testing.T, cancelIt bool) {
	path := UniquePath(s.cluster, "abandon")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, 2)
	holder := s.newRival(t, sessions[0], path)
	waiter := s.newLock(t, sessions[1], path)
	hl := mustAcquire(t, holder, 10*time.Second)
	held := ephemeralsOrFail(t, sessions[0], path)
	require.NotEmpty(t, OwnedBy(held, hl.Epoch().SessionID()), "the holder has a node")

	var (
		ctx    context.Context
		cancel context.CancelFunc
		want   error
	)
	if cancelIt {
		ctx, cancel = context.WithCancel(context.Background())
		want = context.Canceled
	} else {
		ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
		want = context.DeadlineExceeded
	}
	defer cancel()
	before := watchesSet(sessions[1])
	res := acquireAsync(ctx, waiter)
	queued := WaitQueued(t, sessions[1], before, 10*time.Second)
	if cancelIt {
		cancel()
	} else if queued {
		assert.NoError(t, ctx.Err(), "the waiter queued well before its deadline")
	}
	r, ok := await(t, res, 15*time.Second, "abandoned Acquire")
	require.True(t, ok)
	assert.ErrorIs(t, r.err, want)
	assert.Nil(t, r.lease)
	if !cancelIt {
		deadline, hasDeadline := ctx.Deadline()
		require.True(t, hasDeadline)
		assert.Less(t, r.at.Sub(deadline), 5*time.Second, "Acquire returns promptly at its deadline")
	}

	// Only the holder's nodes remain: the waiter's node is deleted before
	// Acquire returns unless that takes longer than its grace after the
	// deadline (a loaded machine), and then in the background.
	var after map[string]int64
	WaitFor(t, 5*time.Second, "the abandoned waiter's node deleted", func() bool {
		after = ephemeralsOrFail(t, sessions[0], path)
		return len(OwnedBy(after, sessionID(t, sessions[1]))) == 0
	})
	assert.Equal(t, held, after, "only the holder's nodes remain, unchanged")
	assert.False(t, isClosed(hl.Lost()), "the holder still holds")
	assert.ErrorIs(t, waiter.Release(Ctx(t, 10*time.Second)), lock.ErrNotHeld, "the abandoned waiter holds nothing")
	l, ok, err := waiter.TryAcquire(Ctx(t, 10*time.Second))
	assert.NoError(t, err)
	assert.False(t, ok, "TryAcquire while the other holds")
	assert.Nil(t, l)
	assert.Equal(t, held, ephemeralsOrFail(t, sessions[0], path), "a failed TryAcquire leaves nothing")

	// Later acquires work: the same waiter handle gets the lock once the
	// holder lets go.
	before = watchesSet(sessions[1])
	res = acquireAsync(Ctx(t, 30*time.Second), waiter)
	WaitQueued(t, sessions[1], before, 10*time.Second)
	mustRelease(t, holder, 10*time.Second)
	r, ok = await(t, res, 20*time.Second, "Acquire after an abandoned one")
	require.True(t, ok)
	require.NoError(t, r.err)
	assert.NotNil(t, r.lease)
	mustRelease(t, waiter, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, sessions[0], path), "nothing left")
}

// testReleaseNotHeld: Release on a handle that holds nothing, or a second
// Release, is an error, not a panic, and does not disturb the holder.
func (s *suite) testReleaseNotHeld(t *testing.T) {
	path := UniquePath(s.cluster, "notheld")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, 2)
	holder := s.newLock(t, sessions[0], path)
	other := s.newLock(t, sessions[1], path)
	ctx := Ctx(t, 10*time.Second)

	assert.Error(t, other.Release(ctx), "release before any acquire")
	hl := mustAcquire(t, holder, 10*time.Second)
	assert.Error(t, other.Release(ctx), "release by a handle that does not hold the lock")
	assert.False(t, isClosed(hl.Lost()), "a foreign release does not disturb the holder")
	assert.NotEmpty(t, OwnedBy(ephemeralsOrFail(t, sessions[0], path), hl.Epoch().SessionID()))
	require.NoError(t, holder.Release(ctx))
	assert.Error(t, holder.Release(ctx), "a second release")
	assert.Empty(t, ephemeralsOrFail(t, sessions[0], path))
}

// testRefusedRelease: a release the server refuses (no permission to
// delete in the node's parent) returns the server's error, neither "not
// held" nor "pending", and changes nothing: the lease is not lost, the
// node is still there, and a later Release, once allowed, releases it.
func (s *suite) testRefusedRelease(t *testing.T) {
	path := UniquePath(s.cluster, "refused")
	sess := Connect(t, s.cluster.Servers(), s.cfg.sessionTimeout)
	lk := s.newLock(t, sess, path)
	ctx := Ctx(t, 20*time.Second)
	l := mustAcquire(t, lk, 10*time.Second)
	parent := l.Path()[:strings.LastIndexByte(l.Path(), '/')]

	SetACL(t, s.cluster.Servers(), parent, zk.WorldACL(zk.PermAll&^zk.PermDelete))
	err := lk.Release(ctx)
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	assert.NotErrorIs(t, err, lock.ErrReleasePending)
	assert.NotErrorIs(t, err, lock.ErrNotHeld)
	assert.NoError(t, l.Err(), "the lease is still good")
	assert.False(t, isClosed(l.Lost()))
	assert.True(t, Exists(t, sess, l.Path()), "the node is still there")

	SetACL(t, s.cluster.Servers(), parent, zk.WorldACL(zk.PermAll))
	require.NoError(t, lk.Release(ctx), "the lock was still held: the second release releases it")
	assert.False(t, Exists(t, sess, l.Path()))
	assert.Empty(t, ephemeralsOrFail(t, sess, path))
}
