package mutex_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// lock.Revoke's documented answers to its argument: a node that is gone
// is nil (nothing left to revoke), a path that is not a lock's contender
// node (an election's node, a node of no lock) or not a valid path is
// conn.ErrInvalidArgument and writes nothing, and a sealed holder's node
// is lock.ErrNotRevocable.
func TestRevokeArguments(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 30*time.Second)
	sealed := newMutex(t, ss[0], path)

	l, err := sealed.Acquire(ctx)
	require.NoError(t, err)
	err = lock.Revoke(ctx, ss[1], l.Path())
	assert.ErrorIs(t, err, lock.ErrNotRevocable)
	assert.EqualError(t, err, "lock: revoke "+l.Path()+": "+lock.ErrNotRevocable.Error(),
		"the operation and the node once, then the cause")
	assert.EqualError(t, lock.Revoke(ctx, ss[1], path+"/a"), "lock: revoke "+path+"/a: not a lock's contender node: conn: invalid argument")
	latch := path + "/_c_0f8f1f2e-4b1a-4c3d-9e5f-000000000001-latch-0000000001" // an election's
	for _, bad := range []string{"", "x", "/", path, path + "/", path + "/a/b", latch} {
		assert.ErrorIs(t, lock.Revoke(ctx, ss[1], bad), conn.ErrInvalidArgument, "node %q", bad)
	}
	assert.ErrorIs(t, lock.Revoke(ctx, nil, l.Path()), conn.ErrInvalidArgument)
	gone := l.Path()
	require.NoError(t, sealed.Release(ctx))
	assert.NoError(t, lock.Revoke(ctx, ss[1], gone), "a node that is gone")
	assert.NoError(t, lock.Revoke(ctx, ss[1], path+"-x/"+zkpath.Base(gone)), "a node that never was")
	assert.Empty(t, testzk.Children(t, ss[0], path), "Revoke created nothing")
}

// With WithRevocable and WithLocalHandoff, a revoke request reaches the
// local grant that holds the shared node, and ends the handoff in the
// process on that node: the holder's release gives the node back, so the
// contender of another process that asked, queued behind it, gets the lock
// before the local waiter, which queues a node of its own.
func TestRevokeEndsLocalHandoff(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 30*time.Second)
	m := newMutex(t, ss[0], path, lock.WithRevocable(), lock.WithLocalHandoff(10, 0))
	other := newMutex(t, ss[1], path, lock.WithRevocable())

	first, err := m.Acquire(ctx)
	require.NoError(t, err)
	order := make(chan string, 2)
	local := make(chan *conn.Lease, 1)
	rel, relErr := make(chan struct{}), make(chan error, 1)
	go func() {
		l, err := m.Acquire(ctx)
		order <- "local"
		local <- l
		if err != nil {
			relErr <- err
			return
		}
		<-rel
		relErr <- m.Release(ctx) // the mutex is owned per goroutine
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return mutex.LocalWaiters(m) == 1 }, "goroutine 2 does not queue")
	otherErr := make(chan error, 1)
	go func() {
		_, err := other.Acquire(ctx)
		order <- "other"
		if err == nil {
			err = other.Release(ctx)
		}
		otherErr <- err
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, ss[0], path)) == 2 }, "the other process does not queue")

	revoked := first.Revoked()
	require.NoError(t, lock.Revoke(ctx, ss[1], first.Path()))
	select {
	case <-revoked:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder's Revoked not closed within 10s")
	}
	assert.NoError(t, first.Err(), "a request is not a loss")
	require.NoError(t, m.Release(ctx))
	require.NoError(t, <-otherErr)
	assert.Equal(t, "other", <-order, "the process that asked enters first")
	second := <-local
	require.NotNil(t, second)
	assert.NotEqual(t, first.Path(), second.Path(), "the revoked node was handed on in the process")
	select {
	case <-second.Revoked():
		t.Error("a request for the old node stands for the new one")
	default:
	}
	close(rel)
	require.NoError(t, <-relErr)
	assert.Empty(t, testzk.Children(t, ss[0], path))
}

// connlink.Lease.CheckOp checks the node, and the grants of the in-process
// handoff share it: a released local grant's CheckOp still passes while the
// next local grant holds the node, whereas its GuardedWrite is refused. Its
// holder must use GuardedWrite (or check Err first).
func TestLocalHandoffCheckOpIsTheNodes(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 30*time.Second)
	m := newMutex(t, s, path, lock.WithLocalHandoff(10, 0))
	first, second, release := holdAndQueue(ctx, t, m)
	require.Equal(t, first.Path(), second.Path(), "one node, two grants")
	assert.ErrorIs(t, first.Err(), conn.ErrLeaseLost, "the first grant is released")

	acl := zk.WorldACL(zk.PermAll)
	_, err := first.GuardedWrite(ctx, &zk.CreateRequest{Path: path + "-guarded", Acl: acl})
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	_, err = connlink.Of(first.Epoch()).Multi(ctx, connlink.Of(first).CheckOp(), &zk.CreateRequest{Path: path + "-checked", Acl: acl})
	assert.NoError(t, err, "the shared node exists: the check passes")
	require.NoError(t, release())
	_, err = connlink.Of(first.Epoch()).Multi(ctx, connlink.Of(first).CheckOp(), &zk.CreateRequest{Path: path + "-after", Acl: acl})
	assert.ErrorIs(t, err, zk.ErrNoNode, "refused once the node is gone")
}

// A grant released by a local handoff sees no later event: a revoke request
// to the node's next local holder closes that holder's Revoked, not the
// released grant's.
func TestRevokeAfterLocalHandoffSparesTheReleasedGrant(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	path := testzk.Path(t, c, "lock")
	ctx := testzk.Ctx(t, 30*time.Second)
	m := newMutex(t, ss[0], path, lock.WithRevocable(), lock.WithLocalHandoff(10, 0))
	first, second, release := holdAndQueue(ctx, t, m)
	require.Equal(t, first.Path(), second.Path(), "handed on in the process")
	firstRevoked := first.Revoked()

	require.NoError(t, lock.Revoke(ctx, ss[1], second.Path()))
	select {
	case <-second.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder's Revoked not closed within 10s")
	}
	select {
	case <-firstRevoked:
		t.Error("the released grant's Revoked closed by a request to the next holder")
	default:
	}
	require.NoError(t, release())
	assert.Empty(t, testzk.Children(t, ss[0], path))
}
