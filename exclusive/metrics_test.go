package exclusive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The exclusive lock reports its hold under its own name and lock path,
// its release watched on Lost included (no loss); it reports no wait (it
// does not use the shared engine).
func TestMetricsHold(t *testing.T) {
	c := zktest.New(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec))
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 30*time.Second)
	l, err := exclusive.New(s, path)
	require.NoError(t, err)
	lease, err := l.Acquire(ctx)
	require.NoError(t, err)
	lost := lease.Lost()
	require.NoError(t, l.Release(ctx))
	<-lost
	assert.Equal(t, []conn.LockMetric{{Event: conn.LockHold, Recipe: "exclusive", Path: path}},
		testzk.LockEvents(rec.Take()))
}
