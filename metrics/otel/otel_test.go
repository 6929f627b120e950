package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	zkotel "github.com/zkrecipes/zkrecipes/metrics/otel"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) { testzk.Main(m) }

// instrument returns the collected metric name, or fails.
func instrument(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("no instrument %s", name)
	return metricdata.Metrics{}
}

func has(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.AsString() != v {
			return false
		}
	}
	return true
}

func histCount(t *testing.T, m metricdata.Metrics, want map[string]string) (uint64, float64) {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is %T", m.Name, m.Data)
	for _, p := range h.DataPoints {
		if has(p.Attributes, want) {
			return p.Count, p.Sum
		}
	}
	return 0, 0
}

func sum(t *testing.T, m metricdata.Metrics, want map[string]string) int64 {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is %T", m.Name, m.Data)
	for _, p := range s.DataPoints {
		if has(p.Attributes, want) {
			return p.Value
		}
	}
	return 0
}

// A mutex acquired and released, then its holder's session expired, read
// back through the SDK's manual reader: a granted wait, a hold in seconds,
// a lease lost with cause expiry and a second epoch.
func TestManualReader(t *testing.T) {
	c := testzk.Shared(t)
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, provider.Shutdown(context.Background())) }()
	m, err := zkotel.New(provider.Meter("zkrecipes"), zkotel.WithPathLabel(zkotel.PathAsIs))
	require.NoError(t, err)
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(m))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	mu, err := mutex.New(s, path)
	require.NoError(t, err)

	_, err = mu.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Release(ctx))
	l, err := mu.Acquire(ctx)
	require.NoError(t, err)
	lost := l.Lost()
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], l.Epoch()))
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("lease not lost")
	}
	testzk.Epoch(t, s)
	_ = mu.Release(ctx)

	var rm metricdata.ResourceMetrics
	testzk.Eventually(t, 10*time.Second, func() bool {
		require.NoError(t, reader.Collect(ctx, &rm))
		return sum(t, instrument(t, rm, "zkrecipes.session.epochs"), nil) == 2
	}, "no second epoch collected")

	lock := map[string]string{"recipe": "mutex", "path": path}
	wait := instrument(t, rm, "zkrecipes.lock.wait.duration")
	assert.Equal(t, "s", wait.Unit)
	n, _ := histCount(t, wait, map[string]string{"recipe": "mutex", "path": path, "outcome": "granted"})
	assert.EqualValues(t, 2, n)
	n, secs := histCount(t, instrument(t, rm, "zkrecipes.lock.hold.duration"), lock)
	assert.EqualValues(t, 1, n)
	assert.Positive(t, secs)
	assert.Less(t, secs, 60.0, "hold not in seconds")
	assert.EqualValues(t, 1, sum(t, instrument(t, rm, "zkrecipes.lock.lost"),
		map[string]string{"recipe": "mutex", "path": path, "cause": "expiry"}))
	assert.EqualValues(t, 1, sum(t, instrument(t, rm, "zkrecipes.session.transitions"), map[string]string{"state": "Lost"}))
	n, _ = histCount(t, instrument(t, rm, "zkrecipes.request.duration"), map[string]string{"op": "create", "outcome": "ok"})
	assert.GreaterOrEqual(t, n, uint64(2))
}

// zkrecipes.session.watches is the session's watches on the server, read
// back through the SDK: 1 while a waiter waits behind another session's
// holder, 0 once it gave up.
func TestWatchesGauge(t *testing.T) {
	c := testzk.Shared(t)
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, provider.Shutdown(context.Background())) }()
	m, err := zkotel.New(provider.Meter("zkrecipes"))
	require.NoError(t, err)
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(m))
	other := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, time.Minute)
	// The instrument is collected once something was recorded in it.
	watches := func() int64 {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(ctx, &rm))
		for _, sm := range rm.ScopeMetrics {
			for _, w := range sm.Metrics {
				if w.Name != "zkrecipes.session.watches" {
					continue
				}
				assert.Equal(t, "{watch}", w.Unit)
				s, ok := w.Data.(metricdata.Sum[int64])
				require.True(t, ok, "%T", w.Data)
				assert.False(t, s.IsMonotonic, "an up-down counter")
				return sum(t, w, nil)
			}
		}
		return 0
	}

	holder, err := mutex.New(other, path)
	require.NoError(t, err)
	_, err = holder.Acquire(ctx)
	require.NoError(t, err)
	waiter, err := mutex.New(s, path)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(wctx)
		errc <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return watches() == 1 }, "the waiter's watch not counted")
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	testzk.Eventually(t, 10*time.Second, func() bool { return watches() == 0 }, "the count does not go back to 0")
	require.NoError(t, holder.Release(ctx))
}
