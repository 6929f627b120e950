package semaphoremutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// Revoke's documented answers to its argument: a node that is not a lease
// node or an internal lock node of the semaphore (or not a valid path) is
// conn.ErrInvalidArgument, a sealed holder's node is lock.ErrNotRevocable, and
// a node that is gone is nil.
func TestRevokeArguments(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "sem")
	ctx := testzk.Ctx(t, 30*time.Second)
	holder := newSemaphore(t, ss[0], path, 2)
	other, err := semaphoremutex.NewSemaphore(ss[1], path, 2, semaphoremutex.WithRevocable())
	require.NoError(t, err)

	l, err := holder.Acquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, other.Revoke(ctx, l.Path()), lock.ErrNotRevocable)
	name := zkpath.Base(l.Path())
	for _, bad := range []string{"", "x", path, path + "/" + name, path + "/other/" + name, l.Path() + "/x"} {
		assert.ErrorIs(t, other.Revoke(ctx, bad), conn.ErrInvalidArgument, "node %q", bad)
	}
	gone := l.Path()
	require.NoError(t, holder.ReturnLease(ctx, l))
	assert.NoError(t, other.Revoke(ctx, gone), "a lease node that is gone")
	assert.NoError(t, other.Revoke(ctx, path+"/locks/"+name), "an internal lock node that is gone")
}

// TestRevokeOwnLeaseNode: a sealed lease node (the default) refuses a
// Revoke through its own session too, the holder's handle or another on
// the same Session: lock.ErrNotRevocable, and nothing is written (a sealed
// node gives its own session every right: the refusal is ours).
func TestRevokeOwnLeaseNode(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.ConnectN(t, c.Servers(), 1)[0]
	path := testzk.Path(t, c, "sem")
	ctx := testzk.Ctx(t, 30*time.Second)
	holder := newSemaphore(t, s, path, 2)
	other := newSemaphore(t, s, path, 2)

	l, err := holder.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, path+"/leases/"+zkpath.Base(l.Path()), l.Path(), "a lease node")
	for _, sem := range []*semaphoremutex.Semaphore{holder, other} {
		assert.ErrorIs(t, sem.Revoke(ctx, l.Path()), lock.ErrNotRevocable)
	}
	_, st, err := s.Get(ctx, l.Path())
	require.NoError(t, err)
	assert.Zero(t, st.Version, "nothing written into the lease node")
	require.NoError(t, holder.ReturnLease(ctx, l))
}
