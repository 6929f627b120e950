package locktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// testHolderExpired: the server expires the holder's session. The holder's
// lease is Lost, a queued waiter (the rival) acquires, the old holder's
// guarded write is refused with ErrLeaseLost (and re-entering its lost
// lease too, for a reentrant lock), its Release returns nil at once, and
// the old holder's handle works again in its next session.
func (s *suite) testHolderExpired(t *testing.T) {
	path := UniquePath(s.cluster, "expiry")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, 3)
	observer := sessions[2]
	mon, err := newMonitor(Ctx(t, 10*time.Second), observer, path)
	require.NoError(t, err)
	holder := s.newLock(t, sessions[0], path)
	waiter := s.newRival(t, sessions[1], path)
	ctx := Ctx(t, 60*time.Second)

	hl := mustAcquire(t, holder, 10*time.Second)
	hStart, err := mon.enter(ctx, 0, hl)
	require.NoError(t, err)
	token, err := hl.Fence(ctx)
	require.NoError(t, err)

	before := watchesSet(sessions[1])
	res := acquireAsync(ctx, waiter)
	require.True(t, WaitQueued(t, sessions[1], before, 10*time.Second))

	ep := hl.Epoch()
	lost := hl.Lost() // armed before the expiry: its node watch is in flight or set when the epoch ends
	require.NoError(t, zktest.ExpireEpoch(ctx, s.cluster.Servers()[0], ep))

	select {
	case <-ep.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the expired holder's epoch has not ended within 20s")
	}
	select {
	case <-lost:
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
	if oep, err := connlink.Of(observer).Epoch(ctx); assert.NoError(t, err) {
		b, _, err := connlink.Of(oep).Get(ctx, mon.guard)
		assert.NoError(t, err)
		assert.NotEqual(t, "stale", string(b), "and not applied")
	}
	_, err = r.lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: mon.guard, Data: []byte("1"), Version: -1})
	assert.NoError(t, err, "the new holder's guarded write goes through")
	wToken, err := r.lease.Fence(ctx)
	require.NoError(t, err)
	assert.Positive(t, wToken.Compare(token), "fencing tokens grow: %v after %v", wToken, token)

	if s.cfg.reentrant {
		_, err = holder.Acquire(ctx)
		assert.ErrorIs(t, err, conn.ErrLeaseLost, "re-entering a lost lease is refused")
	}

	// The old holder's release must not hang, nor fail, nor touch the new
	// holder's node.
	relCtx := Ctx(t, 10*time.Second)
	assert.NoError(t, holder.Release(relCtx), "releasing a lost lease")
	assert.NoError(t, relCtx.Err(), "release after expiry returns promptly")
	assert.ErrorIs(t, holder.Release(ctx), lock.ErrNotHeld, "a second release")
	assert.False(t, isClosed(r.lease.Lost()), "the old holder's release does not disturb the new holder")
	assert.NotEmpty(t, OwnedBy(ephemeralsOrFail(t, observer, path), r.lease.Epoch().SessionID()))

	// The old holder's handle acquires again, in its session's next epoch.
	before = watchesSet(sessions[0])
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

// testWaiterExpired: the server expires the session of a waiter queued
// behind the rival. The waiter starts over in its session's next epoch
// (one node, in the new session), still waits while the holder holds, and
// acquires in the new session once the holder lets go, leaving nothing.
func (s *suite) testWaiterExpired(t *testing.T) {
	path := UniquePath(s.cluster, "waiter-expiry")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, 2)
	hs, ws := sessions[0], sessions[1]
	holder, waiter := s.newRival(t, hs, path), s.newLock(t, ws, path)
	ctx := Ctx(t, time.Minute)
	mustAcquire(t, holder, 10*time.Second)

	watches := watchesSet(ws)
	res := acquireAsync(ctx, waiter)
	require.True(t, WaitQueued(t, ws, watches, 10*time.Second))
	ep, err := connlink.Of(ws).Epoch(ctx)
	require.NoError(t, err)
	watches = watchesSet(ws)
	require.NoError(t, zktest.ExpireEpoch(ctx, s.cluster.Servers()[0], ep))
	select {
	case <-ep.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter's epoch has not ended within 20s")
	}
	require.True(t, WaitQueued(t, ws, watches, 20*time.Second), "waiting again, in the next session")
	next := sessionID(t, ws)
	assert.NotEqual(t, ep.SessionID(), next)
	assert.Len(t, OwnedBy(ephemeralsOrFail(t, hs, path), next), 1, "queued again: its new node")
	select {
	case r := <-res:
		t.Fatalf("the waiter returned while the lock is held: %+v", r)
	default:
	}

	mustRelease(t, holder, 10*time.Second)
	r, ok := await(t, res, 20*time.Second, "waiter after its session expired")
	require.True(t, ok)
	require.NoError(t, r.err)
	assert.Equal(t, next, r.lease.Epoch().SessionID(), "holds in the new session")
	assert.NoError(t, r.lease.Err())
	mustRelease(t, waiter, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, hs, path), "nothing left")
}
