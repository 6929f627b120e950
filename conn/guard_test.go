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
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// guarded creates a guard node and a lock node in s's epoch and returns a
// lease on the lock node that stands on the guard (rwlock's downgrade).
func guarded(t *testing.T, s *conn.Session, root string) (l *conn.Lease, guard string, zxid int64) {
	t.Helper()
	ctx := context.Background()
	ep := epoch(t, s)
	guard, err := connlink.Of(ep).Create(ctx, root+"-guard", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	node, err := connlink.Of(ep).Create(ctx, root+"-node", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	_, st, err := connlink.Of(ep).Exists(ctx, guard)
	require.NoError(t, err)
	l = ep.NewLease(node)
	l.GuardWith(guard, st.Czxid, 1)
	return l, guard, st.Czxid
}

// TestGuardedGrantStandsOnItsGuard: a grant that stands on another node
// checks that node (CheckOp, GuardedWrite), fences with its czxid and the
// grant's pass, and is lost when that node is deleted by someone else;
// once handed to its own node (Unguard), the guard's deletion is no loss.
func TestGuardedGrantStandsOnItsGuard(t *testing.T) {
	c := zktest.New(t)
	ctx := context.Background()
	s, obs := connect(t, c.Servers()), connect(t, c.Servers())

	l, guard, zxid := guarded(t, s, c.Root()+"-a")
	assert.Equal(t, guard, connlink.Of(l).CheckOp().Path)
	f, err := l.Fence(ctx)
	require.NoError(t, err)
	assert.Equal(t, conn.Fence{Zxid: zxid, Pass: 1}, f)
	_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: guard, Version: -1})
	assert.ErrorIs(t, err, conn.ErrInvalidArgument, "a guarded write may not set its guard's data")
	_, err = l.GuardedWrite(ctx, &zk.CreateRequest{Path: c.Root() + "-a-write", Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral})
	require.NoError(t, err)
	lost := l.Lost()
	require.NoError(t, obs.Delete(ctx, guard, -1))
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost open after the guard was deleted")
	}
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
	assert.Contains(t, l.Err().Error(), guard)
	_, err = l.GuardedWrite(ctx, &zk.CreateRequest{Path: c.Root() + "-a-write2", Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral})
	assert.ErrorIs(t, err, conn.ErrLeaseLost)

	l, guard, _ = guarded(t, s, c.Root()+"-b")
	lost = l.Lost()
	l.Unguard()
	assert.Equal(t, l.Path(), connlink.Of(l).CheckOp().Path)
	require.NoError(t, obs.Delete(ctx, guard, -1))
	_, err = l.GuardedWrite(ctx, &zk.CreateRequest{Path: c.Root() + "-b-write", Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral})
	require.NoError(t, err, "checks its own node once unguarded")
	assert.False(t, isClosed(lost), "the guard's deletion after Unguard is no loss")
	f, err = l.Fence(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), f.Pass, "the grant's fence stays")
	require.NoError(t, obs.Delete(ctx, l.Path(), -1))
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost open after its own node was deleted")
	}

	// Released while its guard stays: the watch on the guard is removed.
	set := connlink.Of(s).Stats().WatchesSet
	l, _, _ = guarded(t, s, c.Root()+"-c")
	_ = l.Lost()
	waitUntil(t, 10*time.Second, "both watches", func() bool { return connlink.Of(s).Stats().WatchesSet == set+2 })
	removed := conn.WatchesRemoved(s)
	l.Released()
	waitUntil(t, 10*time.Second, "the guard's watch removed", func() bool { return conn.WatchesRemoved(s) == removed+1 })
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// TestGuardedWriteFollowsUnguard: a guarded write sent with the check on
// the guard, which is handed to its own node and deleted before the write
// reaches the server, is not a loss: nothing was written, and the write
// is sent again behind the check of the grant's own node.
func TestGuardedWriteFollowsUnguard(t *testing.T) {
	const latency = time.Second
	c := zktest.New(t)
	ctx := context.Background()
	p := zktest.NewProxy(t, c.Servers())
	s, obs := connect(t, p.Addrs()), connect(t, c.Servers())
	l, guard, _ := guarded(t, s, c.Root()+"-a")

	p.SetLatency(latency)
	before := connlink.Of(s).Stats().Requests[metrics.OpMulti]
	done := make(chan error, 1)
	go func() {
		_, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: c.Root() + "-written", Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral})
		done <- err
	}()
	for connlink.Of(s).Stats().Requests[metrics.OpMulti] == before {
		time.Sleep(time.Millisecond)
	}
	sent := time.Now() // the multi, checking the guard, is on its way: it reaches the server after latency
	l.Unguard()
	require.NoError(t, obs.Delete(ctx, guard, -1))
	if time.Since(sent) >= latency {
		t.Skip("the bystander's delete took longer than the proxy's latency: the order is not known")
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("guarded write not answered")
	}
	assert.Equal(t, before+2, connlink.Of(s).Stats().Requests[metrics.OpMulti], "refused behind the deleted guard, then sent again")
	assert.NoError(t, l.Err())
	ok, _, err := obs.Exists(ctx, c.Root()+"-written")
	require.NoError(t, err)
	assert.True(t, ok)
}

// TestGuardedWriteCutByEpochEnd: a guarded write in flight when the local
// timer ends its epoch (the server stopped right after the call) fails
// with an error matching ErrLeaseLost (stop working under the lock) and
// ErrConnectionLoss (it may still be applied: the server had it), and
// the lease is lost from then on.
func TestGuardedWriteCutByEpochEnd(t *testing.T) {
	c := zktest.New(t)
	ctx := context.Background()
	s := connect(t, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	ep := epoch(t, s)
	node, err := s.Create(ctx, c.Root()+"-lock", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	l := ep.NewLease(node)

	before := connlink.Of(s).Stats().Requests[metrics.OpMulti]
	done := make(chan error, 1)
	go func() {
		_, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: c.Root() + "-written", Acl: zk.WorldACL(zk.PermAll)})
		done <- err
	}()
	for connlink.Of(s).Stats().Requests[metrics.OpMulti] == before {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, c.Pause(0))
	defer func() { require.NoError(t, c.Resume(0)) }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("guarded write not answered")
	}
	if ep.Err() == nil {
		t.Fatalf("the write was answered before the epoch ended: %v", err)
	}
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	assert.ErrorIs(t, err, conn.ErrConnectionLoss)
	assert.ErrorIs(t, err, conn.ErrSessionTimeout)
	assert.True(t, isClosed(l.Lost()), "Lost is closed")
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
}
