package semaphoremutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
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

// With lock.WithLocalHandoff, a semaphoremutex's local handoff is reported
// under the same recipe as the holds it passes between (semaphore, its
// lease's: docs/operations.md), its waits under semaphoremutex: a
// dashboard relating handoffs to holds per recipe sees both.
func TestMetricsMutexLocalHandoff(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 30*time.Second)
	m1, err := semaphoremutex.New(s, path, lock.WithLocalHandoff(10, 0))
	require.NoError(t, err)
	m2, err := semaphoremutex.New(s, path, lock.WithLocalHandoff(10, 0))
	require.NoError(t, err)
	_, err = m1.Acquire(ctx)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := m2.Acquire(ctx)
		errc <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return semaphoremutex.LocalWaiters(m2) == 1 }, "m2 does not queue")
	require.NoError(t, m1.Release(ctx))
	require.NoError(t, <-errc)
	require.NoError(t, m2.Release(ctx))
	wait := metrics.Lock{Event: metrics.LockWait, Recipe: "semaphoremutex", Path: path, Outcome: metrics.OutcomeGranted}
	hold := metrics.Lock{Event: metrics.LockHold, Recipe: "semaphore", Path: path}
	assert.ElementsMatch(t, []metrics.Lock{
		wait, wait, hold, hold,
		{Event: metrics.LockHandoff, Recipe: "semaphore", Path: path},
	}, testzk.LockEvents(rec.Take()))
}
