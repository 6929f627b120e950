package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
)

// testReleaseCut: a release whose delete cannot be confirmed is not
// reported as done (the lock's release-pending error, wrapping ctx's), the
// handle holds nothing and its lease is over, and the node goes once the
// connection is back, in the same session.
func (s *suite) testReleaseCut(t *testing.T) {
	f := s.proxied(t, "release-cut")
	ctx := Ctx(t, time.Minute)
	l := mustAcquire(t, f.lk, 10*time.Second)
	require.Equal(t, onlyNode(l), ephemeralsOrFail(t, f.direct, f.path), "the lease's node")

	f.proxy.Blackhole()
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := f.lk.Release(rctx)
	assert.ErrorIs(t, err, lock.ErrReleasePending)
	assert.ErrorIs(t, err, lock.ErrReleasePending)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, f.lk.Release(ctx), lock.ErrNotHeld, "the handle no longer holds it")
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "no guarded write after release")
	assert.True(t, Exists(t, f.direct, l.Path()), "the node is still there")

	f.proxy.Heal()
	WaitFor(t, 20*time.Second, "the pending delete done", func() bool {
		return len(ephemeralsOrFail(t, f.direct, f.path)) == 0
	})
	assert.NoError(t, l.Epoch().Err(), "within the same session")
}
