package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
)

// TestRevokeOnlyLockNodes: Revoke writes only into a lock's contender
// node. An election's node, which its own session could write, and a node
// of no lock are refused with conn.ErrInvalidArgument, their data unchanged.
func TestRevokeOnlyLockNodes(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	ctx := testzk.Ctx(t, 30*time.Second)

	e, err := leader.New(s, testzk.Path(t, c, "election"), "p1")
	require.NoError(t, err)
	l, err := e.Campaign(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Resign(context.WithoutCancel(ctx))) }()

	// a node of no lock, with a sequential-looking name
	plain := testzk.Path(t, c, "config") + "/_c_0f8f1f2e-4b1a-4c3d-9e5f-000000000001-config-0000000001"
	require.NoError(t, connlink.Of(testzk.Epoch(t, s)).CreateParents(ctx, plain))
	_, err = s.Create(ctx, plain, []byte("v1"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Delete(context.WithoutCancel(ctx), plain, -1)) }()

	for _, node := range []string{l.Path(), plain} {
		before, _, err := s.Get(ctx, node)
		require.NoError(t, err)
		assert.ErrorIs(t, lock.Revoke(ctx, s, node), conn.ErrInvalidArgument, "node %s", node)
		after, st, err := s.Get(ctx, node)
		require.NoError(t, err)
		assert.Equal(t, before, after, "node %s", node)
		assert.Zero(t, st.Version, "nothing written into %s", node)
	}
}
