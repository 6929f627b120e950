package mutex_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// recorder is a conn.Metrics that keeps every event, for the tests.
type recorder struct {
	mu       sync.Mutex
	states   []conn.State
	requests map[string]int
	locks    []conn.LockMetric
}

func (r *recorder) State(e conn.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, e.State)
}

func (r *recorder) Request(m conn.RequestMetric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.requests == nil {
		r.requests = map[string]int{}
	}
	r.requests[m.Op]++
}

func (r *recorder) Lock(m conn.LockMetric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.locks = append(r.locks, m)
}

func (r *recorder) Leader(conn.LeaderMetric) {}

// take returns the lock events recorded since the last take.
func (r *recorder) take() []conn.LockMetric {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.locks
	r.locks = nil
	return l
}

func (r *recorder) connected() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.states {
		if s == conn.Connected {
			n++
		}
	}
	return n
}

// events strips durations, which the test checks apart.
func events(ms []conn.LockMetric) []conn.LockMetric {
	out := make([]conn.LockMetric, len(ms))
	for i, m := range ms {
		m.Duration = 0
		out[i] = m
	}
	return out
}

// Each event of a mutex reaches the session's Metrics once, with its
// outcome: a granted wait and a hold; a TryAcquire refused; a wait that
// times out and one cancelled; the session's first epoch and its
// requests.
func TestMetricsWaitsAndHolds(t *testing.T) {
	c := testzk.Shared(t)
	rec := &recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec))
	other := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	assert.Equal(t, 1, rec.connected())

	m := newMutex(t, s, path)
	_, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	got := rec.take()
	assert.Equal(t, []conn.LockMetric{
		{Event: conn.LockWait, Recipe: "mutex", Path: path, Outcome: conn.OutcomeGranted},
		{Event: conn.LockHold, Recipe: "mutex", Path: path},
	}, events(got))
	for _, e := range got {
		assert.Positive(t, e.Duration, "%v", e)
	}
	rec.mu.Lock()
	assert.Positive(t, rec.requests[conn.OpCreate])
	rec.mu.Unlock()

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
	assert.Equal(t, []conn.LockMetric{
		{Event: conn.LockWait, Recipe: "mutex", Path: path, Outcome: conn.OutcomeNotGranted},
		{Event: conn.LockWait, Recipe: "mutex", Path: path, Outcome: conn.OutcomeTimeout},
		{Event: conn.LockWait, Recipe: "mutex", Path: path, Outcome: conn.OutcomeCancelled},
	}, events(rec.take()))
}

// A local handoff is reported once, with one wait per Acquire (the local
// waiter's included, not twice) and one hold per grant; a local waiter
// that gives up reports a cancelled wait.
func TestMetricsLocalHandoff(t *testing.T) {
	c := testzk.Shared(t)
	rec := &recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m, err := mutex.New(s, path, mutex.WithLocalHandoff(10, 0))
	require.NoError(t, err)
	_, _, release := holdAndQueue(ctx, t, m)
	require.NoError(t, release())
	wait := conn.LockMetric{Event: conn.LockWait, Recipe: "mutex", Path: path, Outcome: conn.OutcomeGranted}
	hold := conn.LockMetric{Event: conn.LockHold, Recipe: "mutex", Path: path}
	got := events(rec.take())
	// The order of the two goroutines' reports is theirs: compare as sets.
	assert.ElementsMatch(t, []conn.LockMetric{
		wait, wait, hold, hold,
		{Event: conn.LockHandoff, Recipe: "mutex", Path: path},
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
	assert.ElementsMatch(t, []conn.LockMetric{
		wait, hold,
		{Event: conn.LockWait, Recipe: "mutex", Path: path, Outcome: conn.OutcomeCancelled},
	}, events(rec.take()))
}

// A holder's session expired by the server: its lease is reported lost
// with cause expiry (once it is watched), and a second epoch begins.
func TestMetricsLostOnExpiry(t *testing.T) {
	c := testzk.Shared(t)
	rec := &recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	m := newMutex(t, s, path)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	lost := l.Lost()
	rec.take()
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], l.Epoch()))
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("lease not lost")
	}
	assert.Equal(t, []conn.LockMetric{
		{Event: conn.LockLost, Recipe: "mutex", Path: path, Cause: conn.CauseExpiry},
	}, events(rec.take()))
	_, err = s.Epoch(ctx)
	require.NoError(t, err)
	testzk.Eventually(t, 10*time.Second, func() bool { return rec.connected() == 2 }, "no second epoch reported")
	_ = m.Release(ctx) // its error is the recipe's business; a lost lease's release is no hold
	assert.Empty(t, rec.take())
}
