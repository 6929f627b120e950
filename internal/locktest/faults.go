package locktest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// RunFaults runs the fault suite against the lock type newLock builds, as
// subtests of t, one after another: answers lost with the connection and
// connections cut (through a zktest.Proxy per test), a waiter's session
// expired, the lock path reaped, the session closed, and the deadline
// suite (RunDeadlines) under a blackhole. Each subtest works on
// its own path under the cluster's Root; none restarts a server, so a
// cluster shared by the package's tests will do (WithCluster).
//
// With WithRival it also runs the contract's tests where one holds and
// another waits (TimeoutWhileQueued, CancelWhileQueued,
// HolderSessionExpired), the rival being the other party: a lock that
// shares with its own kind cannot run Run, and one that can runs them
// there.
func RunFaults(t *testing.T, newLock NewLockFunc, opts ...Option) {
	s := newSuite(t, newLock, opts)
	t.Run("LostCreateAnswer", s.testLostCreateAnswer)
	t.Run("LostCreateAnswerWhileQueued", s.testLostCreateWhileQueued)
	t.Run("CutBetweenCreateAndChildren", s.testCutAfterCreate)
	t.Run("CancelDuringCreate", s.testCancelDuringCreate)
	t.Run("ReleaseWithConnectionCut", s.testReleaseCut)
	t.Run("WaiterSessionExpired", s.testWaiterExpired)
	t.Run("ParentReaped", s.testParentReaped)
	t.Run("AcquireAfterClose", s.testAcquireAfterClose)
	s.runDeadlines(t)
	if s.cfg.rival != nil {
		t.Run("TimeoutWhileQueued", func(t *testing.T) { s.testAbandonWhileQueued(t, false) })
		t.Run("CancelWhileQueued", func(t *testing.T) { s.testAbandonWhileQueued(t, true) })
		s.runAbandon(t)
		t.Run("HolderSessionExpired", s.testHolderExpired)
	}
}

// testParentReaped: the lock path and all below it disappear between
// acquires (ZooKeeper reaps empty containers; an operator may delete
// them); the next acquire makes them again, as persistent nodes.
func (s *suite) testParentReaped(t *testing.T) {
	path := UniquePath(s.cluster, "reaped")
	sess := Connect(t, s.cluster.Servers(), s.cfg.sessionTimeout)
	lk := s.newLock(t, sess, path)
	for i := 0; i < 3; i++ {
		mustAcquire(t, lk, 10*time.Second)
		mustRelease(t, lk, 10*time.Second)
		deleteTree(t, sess, path)
		require.False(t, Exists(t, sess, path), "round %d: the lock path is gone", i)
	}
	l := mustAcquire(t, lk, 10*time.Second)
	ctx := Ctx(t, 10*time.Second)
	ep := l.Epoch()
	for p := zkpath.Parent(l.Path()); len(p) >= len(zkpath.Parent(path)); p = zkpath.Parent(p) {
		ok, st, err := connlink.Of(ep).Exists(ctx, p)
		if assert.NoError(t, err) && assert.True(t, ok, "%s exists", p) {
			assert.Zero(t, st.EphemeralOwner, "%s is a plain persistent node", p)
		}
	}
	mustRelease(t, lk, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, sess, path), "nothing left")
}

// deleteTree is DeleteTree on s, failing t on error.
func deleteTree(t testing.TB, s *conn.Session, path string) {
	t.Helper()
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	ep, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)
	require.NoError(t, DeleteTree(ctx, ep, path), "delete %s", path)
}

// testAcquireAfterClose: on a closed session Acquire and TryAcquire fail
// with conn.ErrClosed, again and again (a failed acquire leaves the handle
// free), and the handle holds nothing.
func (s *suite) testAcquireAfterClose(t *testing.T) {
	path := UniquePath(s.cluster, "closed")
	sess := Connect(t, s.cluster.Servers(), s.cfg.sessionTimeout)
	lk := s.newLock(t, sess, path)
	require.NoError(t, sess.Close())
	ctx := Ctx(t, 10*time.Second)
	for i := 0; i < 2; i++ {
		l, err := lk.Acquire(ctx)
		assert.ErrorIs(t, err, conn.ErrClosed, "Acquire %d", i)
		assert.Nil(t, l)
		l, ok, err := lk.TryAcquire(ctx)
		assert.ErrorIs(t, err, conn.ErrClosed, "TryAcquire %d", i)
		assert.False(t, ok)
		assert.Nil(t, l)
	}
	assert.ErrorIs(t, lk.Release(ctx), lock.ErrNotHeld)
	assert.NoError(t, ctx.Err(), "nothing waits on a closed session")
}

// onlyNode is what Ephemerals should list under the lock's path when l is
// the one node there: no orphan.
func onlyNode(l *conn.Lease) map[string]int64 {
	return map[string]int64{l.Path(): l.Epoch().SessionID()}
}
