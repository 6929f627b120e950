package semaphoremutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestReleaseWithConnectionCut: a release whose delete cannot be confirmed
// is not reported as done, and the lease node goes once the connection is
// back, in the same session.
func TestReleaseWithConnectionCut(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	obs := testzk.Connect(t, c.Servers())
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)

	p.Blackhole()
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = m.Release(rctx)
	assert.ErrorIs(t, err, semaphoremutex.ErrReleasePending)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, m.IsAcquired(), "the handle no longer holds it")
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "no guarded write after release")
	assert.Len(t, testzk.Children(t, obs, path+"/leases"), 1, "the lease node is still there")

	p.Heal()
	testzk.Eventually(t, 20*time.Second, func() bool { return len(testzk.Children(t, obs, path+"/leases")) == 0 }, "pending delete done")
	assert.NoError(t, testzk.Epoch(t, s).Err(), "within the same session")
}

// TestLostTransactionAnswer: the answer to the transaction that creates
// our lease node and releases the internal lock is lost with the
// connection. The waiter finds its lease node by its id: it holds the
// lease, with exactly one node, and the internal lock is free.
func TestLostTransactionAnswer(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	hs := testzk.Connect(t, c.Servers())
	holder, m := newMutex(t, hs, path), newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	_, err := holder.Acquire(ctx)
	require.NoError(t, err)

	before := testzk.GetWs(s)
	r := acquireAsync(ctx, m.Acquire)
	testzk.WatchingAnswered(t, s, before) // parked on a watch: its next request is the transaction
	syncs := s.Stats().Requests[conn.OpSync]
	multis := s.Stats().Requests[conn.OpMulti]
	p.CutAfterNextWrite()
	require.NoError(t, holder.Release(ctx))
	got := await(t, r, 20*time.Second, "acquire after a lost answer")
	require.NoError(t, got.err)
	assert.Equal(t, multis+1, s.Stats().Requests[conn.OpMulti], "one transaction")
	assert.Greater(t, s.Stats().Requests[conn.OpSync], syncs, "the answer was lost and the node looked for")
	leases := testzk.Children(t, hs, path+"/leases")
	require.Len(t, leases, 1, "one lease node: ours")
	assert.Equal(t, path+"/leases/"+leases[0], got.lease.Path())
	assert.Empty(t, testzk.Children(t, hs, path+"/locks"), "the internal lock was released with the create")
	require.NoError(t, m.Release(ctx))
	assert.Empty(t, ephemerals(t, hs, path))
}
