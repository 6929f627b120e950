package exclusive_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The exclusive lock reports its wait and its hold under its own name and
// lock path, its release watched on Lost included (no loss).
func TestMetricsHold(t *testing.T) {
	c := zktest.New(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 30*time.Second)
	l, err := exclusive.New(s, path)
	require.NoError(t, err)
	lease, err := l.Acquire(ctx)
	require.NoError(t, err)
	lost := lease.Lost()
	require.NoError(t, l.Release(ctx))
	<-lost
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "exclusive", Path: path, Outcome: metrics.OutcomeGranted},
		{Event: metrics.LockHold, Recipe: "exclusive", Path: path},
	}, testzk.LockEvents(rec.Take()))
}

// Each Acquire and TryAcquire of the exclusive lock reports one wait, with
// its outcome, as the other recipes' do: granted (with its duration), a
// TryAcquire refused, a wait that times out, one cancelled, and one that
// fails on a closed session.
func TestMetricsWaits(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	other := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)

	held, err := exclusive.New(other, path)
	require.NoError(t, err)
	_, err = held.Acquire(ctx)
	require.NoError(t, err)
	l, err := exclusive.New(s, path)
	require.NoError(t, err)
	_, ok, err := l.TryAcquire(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = l.Acquire(tctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = l.Acquire(cctx)
	require.ErrorIs(t, err, context.Canceled)

	// Granted once the holder releases: the wait lasts at least from the
	// moment the waiter is seen watching to the release.
	errc := make(chan error, 1)
	before := testzk.WatchesSet(s)
	began := time.Now()
	go func() {
		_, err := l.Acquire(ctx)
		errc <- err
	}()
	testzk.Watching(t, s, before)
	const hold = 300 * time.Millisecond
	time.Sleep(hold) // the holder keeps the lock this long while the waiter waits
	require.NoError(t, held.Release(ctx))
	require.NoError(t, <-errc)
	took := time.Since(began)
	got := rec.Take()
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "exclusive", Path: path, Outcome: metrics.OutcomeNotGranted},
		{Event: metrics.LockWait, Recipe: "exclusive", Path: path, Outcome: metrics.OutcomeTimeout},
		{Event: metrics.LockWait, Recipe: "exclusive", Path: path, Outcome: metrics.OutcomeCancelled},
		{Event: metrics.LockWait, Recipe: "exclusive", Path: path, Outcome: metrics.OutcomeGranted},
	}, testzk.LockEvents(got))
	require.Len(t, got, 4)
	assert.GreaterOrEqual(t, got[3].Duration, hold, "the granted wait's duration")
	assert.LessOrEqual(t, got[3].Duration, took, "the granted wait's duration")
	require.NoError(t, l.Release(ctx))
	rec.Take()

	// A session closed under a waiter: the wait ends in an error.
	require.NoError(t, s.Close())
	_, err = l.Acquire(ctx)
	require.ErrorIs(t, err, conn.ErrClosed)
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "exclusive", Path: path, Outcome: metrics.OutcomeError},
	}, testzk.LockEvents(rec.Take()))
}
