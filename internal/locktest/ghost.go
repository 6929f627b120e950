package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
)

const (
	// ghostCuts is how many times testGhost makes the connection go dark:
	// right after the create (WithLostWrite: the write it names), then
	// right after each operation on the lock's path: the search for the node.
	ghostCuts = 3
	// GhostBound is how soon after an acquire gave up on a create whose
	// fate it could not learn another session must be able to take the
	// lock: well under the session timeout, which would otherwise be the
	// only end of the node.
	GhostBound = 4 * time.Second
)

// testGhost: with a bounded retry policy (conn.WithRetry's maxAttempts
// 1: every request fails at its first connection loss) the create is
// applied but its answer lost, and the connection goes dark again right
// after each search for the node by its unique id (the next operation on
// the lock's path; not the first request of a new connection, which may be
// the session's own sync of "/"), ghostCuts times in all. The acquire
// fails; the node it made must not stay in the queue for the life of the
// session, known to nobody: it is found and deleted in the background
// once the connection holds, so that another session acquires within
// GhostBound of the failed acquire, and no node of the session is left.
// The session lives throughout (its expiry would remove the node and
// prove nothing).
func (s *suite) testGhost(t *testing.T) {
	bounded := conn.WithRetry(20*time.Millisecond, time.Second, 1)
	f := s.partitioned(t, "ghost", s.cfg.sessionTimeout, bounded)

	f.proxy.BlackholeAfterWrites(s.cfg.lostWrite)
	res := acquireAsync(Ctx(t, time.Minute), f.lk)
	cuts := 1
	var r result
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case r = <-res:
			done = true
		case <-tick.C:
		}
		if f.proxy.Blackholed() {
			if cuts < ghostCuts && !done {
				f.proxy.BlackholeAfterNextOpOn(f.path)
				cuts++
			}
			f.proxy.Heal()
		}
	}
	f.proxy.BlackholeAfterWrites(0) // disarmed: the connection holds from now on
	f.proxy.Heal()
	failed := time.Now()
	t.Logf("acquire returned after %d cut(s): %v", cuts, r.err)
	require.Error(t, r.err, "the scenario: the acquire fails when it cannot learn its create's fate")
	require.Nil(t, r.lease)
	require.GreaterOrEqual(t, cuts, 2, "the scenario: the connection went dark again after the create's")
	assert.ErrorIs(t, r.err, lock.ErrCreatePending, "the error says that the node is looked for in the background")
	assert.ErrorIs(t, f.lk.Release(Ctx(t, 10*time.Second)), lock.ErrNotHeld, "the handle holds nothing")

	rival := s.newRival(t, f.direct, f.path)
	ctx, cancel := context.WithTimeout(context.Background(), GhostBound)
	defer cancel()
	l, err := rival.Acquire(ctx)
	require.NoError(t, err, "another session acquires within %v of the failed acquire (its nodes: %v)", GhostBound, s.ownNodes(t, f))
	t.Logf("another session acquired %v after the failed acquire", time.Since(failed).Round(time.Millisecond))
	assert.NotNil(t, l)
	assert.True(t, WaitFor(t, GhostBound, "no node of the failed acquire's session", func() bool {
		return len(s.ownNodes(t, f)) == 0
	}))
	assert.Equal(t, f.id, sessionID(t, f.sess), "the session lived throughout")
	mustRelease(t, rival, 10*time.Second)
	mustAcquire(t, f.lk, 20*time.Second)
	mustRelease(t, f.lk, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, f.direct, f.path), "nothing left")
}
