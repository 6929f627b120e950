package semaphoremutex_test

import (
	"strings"
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

// lock.Revoke's documented answers to a semaphore's nodes: a path that is
// not a lease node or an internal lock node (or not a valid path) is
// conn.ErrInvalidArgument, a sealed holder's lease node is
// lock.ErrNotRevocable, and a node that is gone is nil.
func TestRevokeArguments(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "sem")
	ctx := testzk.Ctx(t, 30*time.Second)
	holder := newSemaphore(t, ss[0], path, 2)

	l, err := holder.Acquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, lock.Revoke(ctx, ss[1], l.Path()), lock.ErrNotRevocable)
	for _, bad := range []string{"", "x", path, path + "/leases", path + "/locks", l.Path() + "/x"} {
		assert.ErrorIs(t, lock.Revoke(ctx, ss[1], bad), conn.ErrInvalidArgument, "node %q", bad)
	}
	name := zkpath.Base(l.Path())
	gone := l.Path()
	require.NoError(t, holder.ReturnLease(ctx, l))
	assert.NoError(t, lock.Revoke(ctx, ss[1], gone), "a lease node that is gone")
	lockName := strings.Replace(name, "-lease-", "-lock-", 1)
	assert.NoError(t, lock.Revoke(ctx, ss[1], path+"/locks/"+lockName), "an internal lock node that is gone")
}

// TestRevokeOwnLeaseNode: a sealed lease node (the default) refuses a
// lock.Revoke through its own session too, asked once or again:
// lock.ErrNotRevocable, and nothing is written (a sealed node gives its own
// session every right: the refusal is ours).
func TestRevokeOwnLeaseNode(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.ConnectN(t, c.Servers(), 1)[0]
	path := testzk.Path(t, c, "sem")
	ctx := testzk.Ctx(t, 30*time.Second)
	holder := newSemaphore(t, s, path, 2)

	l, err := holder.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, path+"/leases/"+zkpath.Base(l.Path()), l.Path(), "a lease node")
	for range 2 {
		assert.ErrorIs(t, lock.Revoke(ctx, s, l.Path()), lock.ErrNotRevocable)
	}
	_, st, err := s.Get(ctx, l.Path())
	require.NoError(t, err)
	assert.Zero(t, st.Version, "nothing written into the lease node")
	require.NoError(t, holder.ReturnLease(ctx, l))
}

// A handle released by a local handoff sees no later event: a revoke
// request to the lease node's next local holder closes that holder's
// Revoked, not the released handle's.
func TestRevokeAfterLocalHandoffSparesTheReleasedHandle(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "mutex")
	ctx := testzk.Ctx(t, 30*time.Second)
	opts := []lock.Option{lock.WithRevocable(), lock.WithLocalHandoff(10, 0)}
	m1, m2 := newMutex(t, ss[0], path, opts...), newMutex(t, ss[0], path, opts...)

	l1, err := m1.Acquire(ctx)
	require.NoError(t, err)
	revoked1 := l1.Revoked()
	got := make(chan *conn.Lease, 1)
	go func() {
		l, err := m2.Acquire(ctx)
		assert.NoError(t, err)
		got <- l
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return semaphoremutex.LocalWaiters(m1) == 1 }, "m2 does not queue")
	require.NoError(t, m1.Release(ctx))
	l2 := <-got
	require.NotNil(t, l2)
	require.Equal(t, l1.Path(), l2.Path(), "handed on in the process")

	require.NoError(t, lock.Revoke(ctx, ss[1], l2.Path()))
	select {
	case <-l2.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder's Revoked not closed within 10s")
	}
	select {
	case <-revoked1:
		t.Error("the released handle's Revoked closed by a request to the next holder")
	default:
	}
	require.NoError(t, m2.Release(ctx))
}
