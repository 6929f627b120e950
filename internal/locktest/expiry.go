package locktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// testHolderExpired: the server expires the holder's session. The holder's
// lease is Lost, a queued waiter acquires, the old holder's guarded write is
// refused with ErrLeaseLost, and the old holder's handle works again in its
// next session.
func (s *suite) testHolderExpired(t *testing.T) {
	path := UniquePath(s.cluster, "expiry")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, 3)
	observer := sessions[2]
	mon, err := newMonitor(Ctx(t, 10*time.Second), observer, path)
	require.NoError(t, err)
	holder := s.newLock(t, sessions[0], path)
	waiter := s.newLock(t, sessions[1], path)
	ctx := Ctx(t, 60*time.Second)

	hl := mustAcquire(t, holder, 10*time.Second)
	hStart, err := mon.enter(ctx, 0, hl)
	require.NoError(t, err)
	token, err := hl.Token(ctx)
	require.NoError(t, err)

	before := watchRequests(sessions[1])
	res := acquireAsync(ctx, waiter)
	require.True(t, WaitQueued(t, sessions[1], before, 10*time.Second))

	ep := hl.Epoch()
	require.NoError(t, zktest.ExpireSession(ctx, s.cluster.Servers()[0], ep.SessionID(), ep.SessionPassword()))

	// Lost is looked at only once the epoch has ended: arming the lease's
	// node watch (the first Lost call) before an expiry trips a data race
	// inside conn when the watch is re-set as the epoch ends (conn's ops
	// read their results after returning early on the epoch's end).
	select {
	case <-ep.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the expired holder's epoch has not ended within 20s")
	}
	select {
	case <-hl.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the expired holder's lease is not Lost within 5s of its epoch's end")
	}
	assert.ErrorIs(t, hl.Err(), conn.ErrLeaseLost)
	assert.ErrorIs(t, hl.Err(), conn.ErrSessionExpired)
	// A holder stops when told its lease is lost.
	assert.NoError(t, mon.exit(ctx, 0, hl, hStart))
	r, ok := await(t, res, 20*time.Second, "waiter after the holder's expiry")
	require.True(t, ok)
	require.NoError(t, r.err, "a waiter acquires once the holder's session expired")
	wStart, err := mon.enter(ctx, 1, r.lease)
	assert.NoError(t, err, "the old holder's guard went with its session")

	_, err = hl.GuardedWrite(ctx, &zk.SetDataRequest{Path: mon.guard, Data: []byte("stale"), Version: -1})
	assert.ErrorIs(t, err, conn.ErrLeaseLost, "the old holder's guarded write is refused")
	_, err = r.lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: mon.guard, Data: []byte("1"), Version: -1})
	assert.NoError(t, err, "the new holder's guarded write goes through")
	wToken, err := r.lease.Token(ctx)
	require.NoError(t, err)
	assert.Greater(t, wToken, token, "fencing tokens grow")

	// The old holder's release must not hang, nor touch the new holder's
	// node.
	relCtx := Ctx(t, 10*time.Second)
	if err := holder.Release(relCtx); err != nil {
		t.Logf("release after expiry: %v", err)
	}
	assert.NoError(t, relCtx.Err(), "release after expiry returns promptly")
	assert.False(t, isClosed(r.lease.Lost()), "the old holder's release does not disturb the new holder")
	assert.NotEmpty(t, OwnedBy(ephemeralsOrFail(t, observer, path), r.lease.Epoch().SessionID()))

	// The old holder's handle acquires again, in its session's next epoch.
	before = watchRequests(sessions[0])
	res = acquireAsync(ctx, holder)
	WaitQueued(t, sessions[0], before, 10*time.Second)
	assert.NoError(t, mon.exit(ctx, 1, r.lease, wStart))
	mustRelease(t, waiter, 10*time.Second)
	r2, ok := await(t, res, 20*time.Second, "old holder acquiring again")
	require.True(t, ok)
	require.NoError(t, r2.err)
	assert.NotEqual(t, ep.SessionID(), r2.lease.Epoch().SessionID(), "in a new session")
	mustRelease(t, holder, 10*time.Second)
	mon.report(t)
	assert.Empty(t, ephemeralsOrFail(t, observer, path), "nothing left")
}
