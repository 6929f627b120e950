package locktest

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// restart kills server 0 and starts it again, waiting for every session in
// subs to see the connection drop and come back (Reconnected: the session
// survived; Connected: a new one began). It returns the last state each
// subscription saw. An external ensemble skips the test.
func (s *suite) restart(t *testing.T, subs ...<-chan conn.Event) []conn.State {
	t.Helper()
	zktest.RequireOrSkip(t, s.cluster.Kill(0))
	for _, sub := range subs {
		WaitState(t, sub, 15*time.Second, conn.Suspended, conn.Lost)
	}
	require.NoError(t, s.cluster.Restart(0))
	out := make([]conn.State, len(subs))
	for i, sub := range subs {
		ev, _ := WaitState(t, sub, 30*time.Second, conn.Reconnected, conn.Connected)
		out[i] = ev.State
	}
	return out
}

// testRestartWhileQueued: the server restarts while one holds and one waits.
// The waiter must neither get in while the holder still holds nor hang
// after the holder lets go.
func (s *suite) testRestartWhileQueued(t *testing.T) {
	path := UniquePath(s.cluster, "restart-queued")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, 3)
	observer := sessions[2]
	mon, err := newMonitor(Ctx(t, 10*time.Second), observer, path)
	require.NoError(t, err)
	holder := s.newLock(t, sessions[0], path)
	waiter := s.newLock(t, sessions[1], path)
	ctx := Ctx(t, 90*time.Second)

	hl := mustAcquire(t, holder, 10*time.Second)
	hStart, err := mon.enter(ctx, 0, hl)
	require.NoError(t, err)
	before := watchesSet(sessions[1])
	res := acquireAsync(ctx, waiter)
	require.True(t, WaitQueued(t, sessions[1], before, 10*time.Second))

	lost := hl.Lost() // armed across the restart
	subH, subW := sessions[0].Subscribe(ctx), sessions[1].Subscribe(ctx)
	states := s.restart(t, subH, subW)
	t.Logf("after the restart: holder %v, waiter %v", states[0], states[1])

	survived := states[0] == conn.Reconnected && hl.Epoch().Err() == nil
	if survived {
		// The holder's session survived: it still holds, so the waiter
		// must still be waiting.
		_, err := hl.GuardedWrite(ctx, &zk.SetDataRequest{Path: mon.guard, Data: []byte("0"), Version: -1})
		assert.NoError(t, err, "the holder's lock survives a restart within the session timeout")
		assert.False(t, isClosed(lost), "not lost: %v", hl.Err())
		select {
		case r := <-res:
			t.Fatalf("the waiter got in while the holder still held: %+v", r)
		default:
		}
	} else {
		t.Logf("the holder's session did not survive the restart; its lease: %v", hl.Err())
	}
	assert.NoError(t, mon.exit(ctx, 0, hl, hStart))
	if err := holder.Release(ctx); err != nil && survived {
		t.Errorf("release after the restart: %v", err)
	}

	r, ok := await(t, res, 30*time.Second, "waiter after the restart")
	require.True(t, ok)
	require.NoError(t, r.err, "the queued waiter acquires after the restart")
	wStart, err := mon.enter(ctx, 1, r.lease)
	assert.NoError(t, err)
	assert.NoError(t, mon.exit(ctx, 1, r.lease, wStart))
	mustRelease(t, waiter, 10*time.Second)
	mon.report(t)
	WaitFor(t, 10*time.Second, "no ephemeral node left", func() bool {
		return len(ephemeralsOrFail(t, observer, path)) == 0
	})
}

// testRestartWhileHolding: the server restarts under a holder. If its
// session survives, it still holds (guarded writes go through, the fencing
// token is unchanged) and releases normally; if not, its lease is Lost.
// Either way the lock is free afterwards.
func (s *suite) testRestartWhileHolding(t *testing.T) {
	path := UniquePath(s.cluster, "restart-holding")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, 2)
	holder := s.newLock(t, sessions[0], path)
	ctx := Ctx(t, 90*time.Second)

	hl := mustAcquire(t, holder, 10*time.Second)
	token, err := hl.Fence(ctx)
	require.NoError(t, err)

	lost := hl.Lost() // armed across the restart
	sub := sessions[0].Subscribe(ctx)
	states := s.restart(t, sub)

	if states[0] == conn.Reconnected {
		assert.NoError(t, hl.Epoch().Err(), "the session survived")
		assert.NoError(t, hl.Err(), "a surviving session keeps its lock")
		_, err := hl.GuardedWrite(ctx, &zk.CreateRequest{Path: path + "-written", Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral})
		assert.NoError(t, err, "guarded write after the restart")
		t2, err := hl.Fence(ctx)
		assert.NoError(t, err)
		assert.Equal(t, token, t2, "same node, same fencing token")
		assert.False(t, isClosed(lost), "not lost: %v", hl.Err())
		assert.NoError(t, holder.Release(ctx))
	} else {
		t.Logf("the holder's session did not survive the restart (%v)", states[0])
		WaitFor(t, 10*time.Second, "the lease of a lost session to be Lost", func() bool { return isClosed(lost) })
		_ = holder.Release(ctx)
	}
	assert.True(t, isClosed(hl.Lost()), "a released lease is Lost")

	other := s.newLock(t, sessions[1], path)
	mustAcquire(t, other, 20*time.Second)
	mustRelease(t, other, 10*time.Second)
	WaitFor(t, 10*time.Second, "no ephemeral node left", func() bool {
		return len(ephemeralsOrFail(t, sessions[1], path)) == 0
	})
}

// testLeaderKill: contenders hammer the lock on a three-server ensemble
// while its leader is killed. Nothing hangs; never two inside.
func (s *suite) testLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server ensemble; skipped with -short")
	}
	c, err := zktest.Start(Ctx(t, 2*time.Minute), zktest.WithServers(3))
	zktest.RequireOrSkip(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	const n, rounds = 5, 10
	path := UniquePath(c, "leader-kill")
	sessions := ConnectN(t, c.Servers(), s.cfg.sessionTimeout, n+1)
	observer := sessions[n]
	mon, err := newMonitor(Ctx(t, 10*time.Second), observer, path)
	require.NoError(t, err)
	locks := make([]Locker, n)
	for i := range locks {
		locks[i] = s.newLock(t, sessions[i], path)
	}

	ctx := Ctx(t, 90*time.Second)
	done := make(chan []error, 1)
	stop := make(chan struct{}) // closed (once, by halt) when holds went on after the kill
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	defer halt()
	go func() { done <- s.hammer(ctx, locks, rounds, stop, mon) }()
	WaitFor(t, 30*time.Second, "a few holds before the kill", func() bool { return mon.holds() >= n })
	leader, err := c.Leader()
	require.NoError(t, err)
	atKill := mon.holds()
	require.NoError(t, c.Kill(leader))
	t.Logf("killed leader %d after %d holds", leader, atKill)
	WaitFor(t, 60*time.Second, "holds to go on after the leader's death", func() bool { return mon.holds() > atKill+n })
	halt()

	var errs []error
	select {
	case errs = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("contenders hang after a leader kill")
	}
	for _, err := range errs {
		t.Error(err)
	}
	mon.report(t)
	assert.GreaterOrEqual(t, mon.holds(), n*rounds)
	WaitFor(t, 20*time.Second, "no ephemeral node left", func() bool {
		return len(ephemeralsOrFail(t, observer, path)) == 0
	})
}
