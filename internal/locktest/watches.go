package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// RunAbandon runs, as subtests of t, the cases where a waiter queued
// behind a holder gives up (ctx cancelled, deadline passed) and must
// leave nothing of its session on the server, node or watch, while the
// holder still holds and every session is open. Run includes them (and
// RunFaults with WithRival); locks tested with neither call it.
func RunAbandon(t *testing.T, newLock NewLockFunc, opts ...Option) {
	newSuite(t, newLock, opts).runAbandon(t)
}

func (s *suite) runAbandon(t *testing.T) {
	t.Run("CancelLeavesNoWatch", func(t *testing.T) { s.testAbandonLeavesNoWatch(t, true) })
	t.Run("TimeoutLeavesNoWatch", func(t *testing.T) { s.testAbandonLeavesNoWatch(t, false) })
}

// testAbandonLeavesNoWatch: a waiter queued behind the rival, which holds,
// gives up; then the server holds no data watch of the waiter's session
// (four-letter wchc) and no more watches than before it queued (mntr
// zk_watch_count, child watches included), with the holder still holding
// and both sessions open. Before conn removed watches, the waiter's watch
// on its predecessor stayed until the holder released.
func (s *suite) testAbandonLeavesNoWatch(t *testing.T, cancelIt bool) {
	path := UniquePath(s.cluster, "nowatch")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, 2)
	holder := s.newRival(t, sessions[0], path)
	waiter := s.newLock(t, sessions[1], path)
	hl := mustAcquire(t, holder, 10*time.Second)
	hl.Lost() // arm the holder's own watch now, so that the count below is stable
	sid := sessionID(t, sessions[1])
	WaitFor(t, 10*time.Second, "the holder's watch set", func() bool { return watchesSet(sessions[0]) > 0 })
	baseline := testzk.WatchCount(t, s.cluster)

	var (
		ctx    context.Context
		cancel context.CancelFunc
	)
	if cancelIt {
		ctx, cancel = context.WithCancel(context.Background())
	} else {
		ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
	}
	defer cancel()
	before := watchesSet(sessions[1])
	res := acquireAsync(ctx, waiter)
	if WaitQueued(t, sessions[1], before, 10*time.Second) {
		assert.NotEmpty(t, testzk.DataWatches(t, s.cluster, sid), "the waiter watches")
	}
	if cancelIt {
		cancel()
	}
	r, ok := await(t, res, 15*time.Second, "abandoned Acquire")
	require.True(t, ok)
	require.Error(t, r.err)
	WaitFor(t, 5*time.Second, "the abandoned waiter's node deleted", func() bool {
		return len(OwnedBy(ephemeralsOrFail(t, sessions[0], path), sid)) == 0
	})
	assert.Empty(t, testzk.DataWatches(t, s.cluster, sid), "no watch of the waiter's session is left")
	assert.Equal(t, baseline, testzk.WatchCount(t, s.cluster), "as many watches as before the waiter queued")
	assert.False(t, isClosed(hl.Lost()), "the holder still holds")
	for i, sess := range sessions {
		ep, err := connlink.Of(sess).Epoch(Ctx(t, time.Second))
		require.NoError(t, err, "session %d open", i)
		assert.NoError(t, ep.Err())
	}
	mustRelease(t, holder, 10*time.Second)
}
