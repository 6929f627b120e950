package semaphoremutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestReleaseWithConnectionCut: a semaphore's release whose delete cannot
// be confirmed is not reported as done, and its lease node goes once the
// connection is back, in the same session. (The mutex's, whose lease is its
// internal lock node: locktest.RunFaults.)
func TestReleaseWithConnectionCut(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	obs := testzk.Connect(t, c.Servers())
	sem := newSemaphore(t, s, path, 2)
	ctx := testzk.Ctx(t, time.Minute)
	l, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.Len(t, testzk.Children(t, obs, path+"/leases"), 1, "the lease's node")

	p.Blackhole()
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = sem.ReturnLease(rctx, l)
	assert.ErrorIs(t, err, lock.ErrReleasePending)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, sem.ReturnLease(ctx, l), lock.ErrNotHeld, "the handle no longer holds it")
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "no guarded write after release")
	assert.Len(t, testzk.Children(t, obs, path+"/leases"), 1, "the node is still there")

	p.Heal()
	testzk.Eventually(t, 20*time.Second, func() bool { return len(testzk.Children(t, obs, path+"/leases")) == 0 }, "pending delete done")
	assert.NoError(t, testzk.Epoch(t, s).Err(), "within the same session")
}

// TestLostTransactionAnswer: the answer to the transaction that creates
// our lease node and releases the internal lock is lost with the
// connection. The waiter finds its lease node by its id: it holds the
// lease, with exactly one node, and the internal lock is free. (Two
// leases: a one-lease semaphore creates no lease node.)
func TestLostTransactionAnswer(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	p := zktest.NewProxy(t, c.Servers())
	s := testzk.Connect(t, p.Addrs())
	hs := testzk.Connect(t, c.Servers())
	holder, sem := newSemaphore(t, hs, path, 2), newSemaphore(t, s, path, 2)
	ctx := testzk.Ctx(t, time.Minute)
	h1, err := holder.Acquire(ctx)
	require.NoError(t, err)
	h2, err := holder.Acquire(ctx)
	require.NoError(t, err)

	before := testzk.WatchesSet(s)
	r := acquireAsync(ctx, sem.Acquire)
	testzk.Watching(t, s, before+1) // watching both leases: its next request is the transaction
	syncs := connlink.Of(s).Stats().Requests[metrics.OpSync]
	multis := connlink.Of(s).Stats().Requests[metrics.OpMulti]
	p.CutAfterNextWrite()
	require.NoError(t, holder.ReturnLease(ctx, h1))
	got := await(t, r, 20*time.Second, "acquire after a lost answer")
	require.NoError(t, got.err)
	assert.Equal(t, multis+1, connlink.Of(s).Stats().Requests[metrics.OpMulti], "one transaction")
	assert.Greater(t, connlink.Of(s).Stats().Requests[metrics.OpSync], syncs, "the answer was lost and the node looked for")
	leases := testzk.Children(t, hs, path+"/leases")
	require.Len(t, leases, 2, "two lease nodes: the other holder's and ours")
	assert.Contains(t, []string{path + "/leases/" + leases[0], path + "/leases/" + leases[1]}, got.lease.Path())
	assert.Empty(t, testzk.Children(t, hs, path+"/locks"), "the internal lock was released with the create")
	require.NoError(t, sem.ReturnLease(ctx, got.lease))
	require.NoError(t, holder.ReturnLease(ctx, h2))
	assert.Empty(t, ephemerals(t, hs, path))
}
