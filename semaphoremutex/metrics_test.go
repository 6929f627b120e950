package semaphoremutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// A semaphore's Acquire is one wait of recipe semaphore on its path (its
// internal lock's wait is part of it), its lease's return one hold; the
// internal lock is not reported (no holder's work; an outside user's
// round3 test counted its loss as a lease lost).
func TestMetricsSemaphore(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	path := testzk.Path(t, c, "sem")
	ctx := testzk.Ctx(t, 30*time.Second)
	sem, err := semaphoremutex.NewSemaphore(s, path, 2)
	require.NoError(t, err)
	l, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, sem.ReturnLease(ctx, l))
	assert.ElementsMatch(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "semaphore", Path: path, Outcome: metrics.OutcomeGranted},
		{Event: metrics.LockHold, Recipe: "semaphore", Path: path},
	}, testzk.LockEvents(rec.Take()))
}

// A semaphoremutex's Acquire is one wait of recipe semaphoremutex (the
// semaphore's under it is not reported again); its hold is its semaphore
// lease's, here the internal lock's node (one lease), recipe semaphore.
func TestMetricsMutex(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 30*time.Second)
	m, err := semaphoremutex.New(s, path)
	require.NoError(t, err)
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	assert.ElementsMatch(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "semaphoremutex", Path: path, Outcome: metrics.OutcomeGranted},
		{Event: metrics.LockHold, Recipe: "semaphore", Path: path},
	}, testzk.LockEvents(rec.Take()))
}
