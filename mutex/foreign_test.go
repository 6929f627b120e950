package mutex_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// TestForeignChildren: children of the lock path that are no contenders of
// this module are ignored, and those of kazoo and go-zookeeper count as
// contenders.
func TestForeignChildren(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, time.Minute)
	ep := testzk.Epoch(t, s)
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, path+"/x"))
	hex := "9f86d081884c7d659a2feaa0c55ad015"
	for _, n := range []string{"hello", "lock-0000000001"} { // ignored
		_, err := s.Create(ctx, path+"/"+n, nil, 0, connlink.Of(s).ACL())
		require.NoError(t, err)
	}
	kazoo, err := s.Create(ctx, path+"/"+hex+"__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, connlink.Of(s).ACL())
	require.NoError(t, err)
	gozk, err := s.Create(ctx, path+"/_c_"+hex+"-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, connlink.Of(s).ACL())
	require.NoError(t, err)

	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, []string{kazoo, gozk}, []string{ps[0].Node, ps[1].Node})
	assert.Equal(t, hex, ps[0].ID)

	_, ok, err := m.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "kazoo's and go-zookeeper's nodes hold the lock")
	require.NoError(t, s.Delete(ctx, kazoo, -1))
	require.NoError(t, s.Delete(ctx, gozk, -1))
	_, ok, err = m.TryAcquire(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "the names that are no contenders do not count")
	require.NoError(t, m.Release(ctx))
	assert.ElementsMatch(t, []string{"hello", "lock-0000000001"}, testzk.Children(t, s, path))
}
