package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestUncontendedAcquireListsBehindCreate: the listing of an uncontended
// acquire is sent right behind its create, without waiting for the
// create's answer. Through a proxy that delays every chunk by d in each
// direction (a chunk also waits for the one before it), the create's
// answer comes after 2d; a listing sent after it would answer after 4d,
// one sent behind the create after 3d. One create and one listing are
// sent, as before.
func TestUncontendedAcquireListsBehindCreate(t *testing.T) {
	c := cluster(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs())
	path := lockPath(t, c)
	q := mutexQueue(t, s, path)
	ctx := ctxTimeout(t, time.Minute)
	l, err := q.Acquire(ctx) // the lock path exists from now on
	require.NoError(t, err)
	require.NoError(t, q.Release(ctx, l))

	const d = 250 * time.Millisecond
	p.SetLatency(d)
	defer p.SetLatency(0)
	before := connlink.Of(s).Stats()
	start := time.Now()
	l, err = q.Acquire(ctx)
	took := time.Since(start)
	require.NoError(t, err)
	after := connlink.Of(s).Stats()
	t.Logf("uncontended acquire took %v with %v per chunk", took.Round(time.Millisecond), d)
	assert.Less(t, took, 7*d/2, "the listing waited for the create's answer")
	assert.Equal(t, int64(1), after.Requests[metrics.OpCreate]-before.Requests[metrics.OpCreate])
	assert.Equal(t, int64(1), after.Requests[metrics.OpChildren]-before.Requests[metrics.OpChildren])
	p.SetLatency(0)
	require.NoError(t, q.Release(ctx, l))
}
