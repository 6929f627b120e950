package mutex_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Each event of a mutex reaches the session's hooks once, with its
// outcome: a granted wait and a hold; a TryAcquire refused; a wait that
// times out and one cancelled; the session's first epoch and its
// requests.
func TestMetricsWaitsAndHolds(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	other := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	assert.Equal(t, 1, rec.Connected())

	m := newMutex(t, s, path)
	_, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	got := rec.Take()
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "mutex", Path: path, Outcome: metrics.OutcomeGranted},
		{Event: metrics.LockHold, Recipe: "mutex", Path: path},
	}, testzk.LockEvents(got))
	for _, e := range got {
		assert.Positive(t, e.Duration, "%v", e)
	}
	assert.Positive(t, rec.Requests(metrics.OpCreate))

	held := newMutex(t, other, path)
	_, err = held.Acquire(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, held.Release(ctx)) }()

	_, ok, err := m.TryAcquire(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = m.Acquire(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = m.Acquire(cctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "mutex", Path: path, Outcome: metrics.OutcomeNotGranted},
		{Event: metrics.LockWait, Recipe: "mutex", Path: path, Outcome: metrics.OutcomeTimeout},
		{Event: metrics.LockWait, Recipe: "mutex", Path: path, Outcome: metrics.OutcomeCancelled},
	}, testzk.LockEvents(rec.Take()))
}

// A local handoff is reported once, with one wait per Acquire (the local
// waiter's included, not twice) and one hold per grant; a local waiter
// that gives up reports a cancelled wait.
func TestMetricsLocalHandoff(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m, err := mutex.New(s, path, lock.WithLocalHandoff(10, 0))
	require.NoError(t, err)
	_, _, release := holdAndQueue(ctx, t, m)
	require.NoError(t, release())
	wait := metrics.Lock{Event: metrics.LockWait, Recipe: "mutex", Path: path, Outcome: metrics.OutcomeGranted}
	hold := metrics.Lock{Event: metrics.LockHold, Recipe: "mutex", Path: path}
	got := testzk.LockEvents(rec.Take())
	// The order of the two goroutines' reports is theirs: compare as sets.
	assert.ElementsMatch(t, []metrics.Lock{
		wait, wait, hold, hold,
		{Event: metrics.LockHandoff, Recipe: "mutex", Path: path},
	}, got)

	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := m.Acquire(cctx)
		errc <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return mutex.LocalWaiters(m) == 1 }, "goroutine 2 does not queue")
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.NoError(t, m.Release(ctx))
	assert.ElementsMatch(t, []metrics.Lock{
		wait, hold,
		{Event: metrics.LockWait, Recipe: "mutex", Path: path, Outcome: metrics.OutcomeCancelled},
	}, testzk.LockEvents(rec.Take()))
}

// A holder's session expired by the server: its lease is reported lost
// with cause expiry (once it is watched), and a second epoch begins.
func TestMetricsLostOnExpiry(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m := newMutex(t, s, path)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	lost := l.Lost()
	rec.Take()
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], l.Epoch()))
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("lease not lost")
	}
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockLost, Recipe: "mutex", Path: path, Cause: metrics.CauseExpiry},
	}, testzk.LockEvents(rec.Take()))
	testzk.Epoch(t, s)
	testzk.Eventually(t, 10*time.Second, func() bool { return rec.Connected() == 2 }, "no second epoch reported")
	_ = m.Release(ctx) // its error is the recipe's business; a lost lease's release is no hold
	assert.Empty(t, rec.Take())
}

// A revoke request on a held node and a third party's deletion of it are
// reported once each: a revoke request, then a loss with cause
// node_deleted; the recipe's release after it is no hold.
func TestMetricsRevokeAndDeleted(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	other := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m := newMutex(t, s, path, lock.WithRevocable())
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	revoked, lost := l.Revoked(), l.Lost()
	require.NoError(t, lock.Revoke(ctx, other, l.Path()))
	select {
	case <-revoked:
	case <-ctx.Done():
		t.Fatal("revoke request not seen")
	}
	require.NoError(t, other.Delete(ctx, l.Path(), -1))
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("deletion not seen")
	}
	_ = m.Release(ctx)
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "mutex", Path: path, Outcome: metrics.OutcomeGranted},
		{Event: metrics.LockRevokeRequest, Recipe: "mutex", Path: path},
		{Event: metrics.LockLost, Recipe: "mutex", Path: path, Cause: metrics.CauseNodeDeleted},
	}, testzk.LockEvents(rec.Take()))
}

// The session's watches (the Watches hook, summed as a gauge) follow what
// the server holds for the session (wchc): each waiter queued behind the
// holder adds the watch on its predecessor, a waiter that gives up takes
// its own away, and each grant the one its waiter had, back to the count
// before the waiters came, with the session open all along.
func TestMetricsWatches(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	other := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	sid := testzk.Epoch(t, s).SessionID()
	base := rec.WatchGauge()
	assert.Len(t, testzk.DataWatches(t, c, sid), base, "before the waiters")
	expect := func(n int, when string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			gauge, server := rec.WatchGauge(), testzk.DataWatches(t, c, sid)
			if gauge == base+n && len(server) == base+n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: gauge %d, the server's watches of the session %v; want %d", when, gauge, server, base+n)
			}
		}
	}

	holder := newMutex(t, other, path)
	_, err := holder.Acquire(ctx)
	require.NoError(t, err)
	type waiter struct {
		cancel  context.CancelFunc
		granted chan error
		release chan chan error
	}
	waiters := make([]waiter, 3)
	for i := range waiters {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w := waiter{cancel: cancel, granted: make(chan error, 1), release: make(chan chan error)}
		waiters[i] = w
		m := newMutex(t, s, path)
		before := testzk.WatchesSet(s)
		go func() {
			_, err := m.Acquire(wctx)
			w.granted <- err
			if err == nil {
				done := <-w.release
				done <- m.Release(ctx)
			}
		}()
		testzk.Watching(t, s, before) // queued in this order
		expect(i+1, fmt.Sprintf("%d waiters", i+1))
	}
	release := func(w waiter) {
		t.Helper()
		done := make(chan error, 1)
		w.release <- done
		require.NoError(t, <-done)
	}

	waiters[2].cancel()
	require.ErrorIs(t, <-waiters[2].granted, context.Canceled)
	expect(2, "the last waiter cancelled")
	require.NoError(t, holder.Release(ctx))
	require.NoError(t, <-waiters[0].granted)
	expect(1, "the first waiter granted")
	release(waiters[0])
	require.NoError(t, <-waiters[1].granted)
	expect(0, "the second waiter granted")
	release(waiters[1])
	expect(0, "all released")
}

// A holder whose server stops answering (paused for real: SIGSTOP, or
// docker pause) loses its lease when its local timer ends the epoch,
// before the server could expire the session: the loss is reported with
// cause local_timer, and the epoch after the server comes back is a
// second one.
func TestMetricsLostOnLocalTimer(t *testing.T) {
	c := zktest.New(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()), conn.WithSessionTimeout(4*time.Second))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m := newMutex(t, s, path)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	lost := l.Lost()
	rec.Take()
	require.NoError(t, c.Pause(0))
	t.Cleanup(func() { _ = c.Resume(0) })
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("lease not lost")
	}
	require.ErrorIs(t, l.Err(), conn.ErrSessionTimeout)
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockLost, Recipe: "mutex", Path: path, Cause: metrics.CauseLocalTimer},
	}, testzk.LockEvents(rec.Take()))
	require.NoError(t, c.Resume(0))
	testzk.Epoch(t, s)
	testzk.Eventually(t, 10*time.Second, func() bool { return rec.Connected() == 2 }, "no second epoch reported")
	_ = m.Release(ctx) // a lost lease's release is no hold
	assert.Empty(t, rec.Take())
}

// Under WithSuspendedAsLost, a holder whose connection is cut (reset by a
// proxy between it and the server) loses its lease at the Suspended
// transition, while the session lives on: the loss is reported with cause
// suspended, and the session goes on in the same epoch.
func TestMetricsLostOnSuspended(t *testing.T) {
	c := testzk.Shared(t)
	p := zktest.NewProxy(t, c.Servers())
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, p.Addrs(), conn.WithMetrics(rec.Hooks()), conn.WithSuspendedAsLost())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m := newMutex(t, s, path)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	lost := l.Lost()
	rec.Take()
	p.Cut()
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("lease not lost")
	}
	require.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
	assert.NoError(t, l.Epoch().Err(), "the epoch lives on")
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockLost, Recipe: "mutex", Path: path, Cause: metrics.CauseSuspended},
	}, testzk.LockEvents(rec.Take()))
	_ = m.Release(ctx) // a lost lease's release is no hold
	assert.Empty(t, rec.Take())
	assert.Equal(t, 1, rec.Connected(), "one epoch")
}
