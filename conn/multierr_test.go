package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A refused multi names the failing op and its path (as the caller gave
// it, without the namespace), and still matches the server's error.
func TestMultiErrorNamesTheFailingOp(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers(), conn.WithNamespace(c.Root()))
	ctx := context.Background()
	ep := epoch(t, s)
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, "/shop/stock"))
	_, err := s.Create(ctx, "/shop/stock", []byte("10"), 0, connlink.Of(s).ACL())
	require.NoError(t, err)

	_, err = connlink.Of(ep).Multi(ctx,
		&zk.CreateRequest{Path: "/shop/order", Acl: connlink.Of(s).ACL()},
		&zk.SetDataRequest{Path: "/shop/stock", Data: []byte("9"), Version: 7})
	require.Error(t, err)
	assert.Equal(t, "conn: multi: op 1 (set-data /shop/stock): zk: version conflict", err.Error())
	assert.ErrorIs(t, err, zk.ErrBadVersion)
	failed, ok := connlink.Of(s).FailedOp(err)
	require.True(t, ok, "a refused multi")
	assert.Equal(t, 1, failed)
	exists, _, err := s.Exists(ctx, "/shop/order")
	require.NoError(t, err)
	assert.False(t, exists, "nothing of a refused multi is applied")

	_, err = connlink.Of(ep).Multi(ctx, &zk.DeleteRequest{Path: "/shop/nothing", Version: -1})
	assert.Equal(t, "conn: multi: op 0 (delete /shop/nothing): zk: node does not exist", err.Error())
	assert.ErrorIs(t, err, zk.ErrNoNode)
	failed, ok = connlink.Of(s).FailedOp(err)
	assert.True(t, ok)
	assert.Zero(t, failed)
	_, _, err = connlink.Of(ep).Get(ctx, "/shop/nothing")
	_, ok = connlink.Of(s).FailedOp(err)
	assert.False(t, ok, "not a multi's: %v", err)
}

// GuardedWrite names a failing op of the caller's by its place among the
// caller's ops; connlink.Lease.CheckOp guards a caller's own Multi with the
// lease.
func TestGuardedWriteAndCheckOpErrors(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers())
	ctx := context.Background()
	ep := epoch(t, s)
	node, err := connlink.Of(ep).Create(ctx, c.Root()+"-lease", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	stock := c.Root() + "-stock"
	_, err = s.Create(ctx, stock, []byte("10"), 0, connlink.Of(s).ACL())
	require.NoError(t, err)
	l := ep.NewLease(node)

	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: stock, Data: []byte("9"), Version: 3})
	assert.Equal(t, "conn: guarded write: op 0 (set-data "+stock+"): zk: version conflict", err.Error())
	assert.ErrorIs(t, err, zk.ErrBadVersion)
	assert.NotErrorIs(t, err, conn.ErrLeaseLost)

	// The caller's own multi, guarded by the lease's check.
	_, err = connlink.Of(ep).Multi(ctx, connlink.Of(l).CheckOp(), &zk.SetDataRequest{Path: stock, Data: []byte("9"), Version: 0})
	require.NoError(t, err)

	// Someone else deletes the lock node: the check refuses the multi.
	other := connect(t, c.Servers())
	require.NoError(t, other.Delete(ctx, node, -1))
	_, err = connlink.Of(ep).Multi(ctx, &zk.SetDataRequest{Path: stock, Data: []byte("8"), Version: -1}, connlink.Of(l).CheckOp())
	assert.Equal(t, "conn: multi: op 1 (check "+node+"): zk: node does not exist", err.Error())
	got, _, err := s.Get(ctx, stock)
	require.NoError(t, err)
	assert.Equal(t, "9", string(got), "the refused multi changed nothing")

	// GuardedWrite tells its own refused check from the caller's ops
	// without asking the server again.
	before := connlink.Of(s).Stats()
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: stock, Data: []byte("8"), Version: -1})
	assert.Equal(t, "conn: lease lost: guarded write refused: node "+node+" is gone", err.Error())
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	assert.Equal(t, int64(1), connlink.Of(s).Stats().Sub(before).TotalRequests(), "one multi, no exists")
}

// Epoch.Done is the epoch's end; Session.Done the Session's.
func TestSessionDoneAndEpochDone(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep := epoch(t, s)
	select {
	case <-ep.Done():
		t.Fatal("Epoch.Done closed while the epoch lives")
	case <-s.Done():
		t.Fatal("Done closed before Close")
	default:
	}
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
	select {
	case <-ep.Done():
	case <-ctx.Done():
		t.Fatal("Epoch.Done not closed after the epoch expired")
	}
	assert.ErrorIs(t, ep.Err(), conn.ErrSessionExpired)
	select {
	case <-s.Done():
		t.Fatal("Session.Done closed when an epoch ended")
	default:
	}
	next, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)
	require.NotEqual(t, ep.SessionID(), next.SessionID())
	select {
	case <-next.Done():
		t.Fatalf("Done of the new epoch closed: %v", next.Err())
	default:
	}
	require.NoError(t, s.Close())
	<-next.Done()
	assert.ErrorIs(t, next.Err(), conn.ErrClosed)
	<-s.Done()
}
