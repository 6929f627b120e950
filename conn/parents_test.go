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

// TestCreateParentsUnderReadOnlyAncestor: alice's node P lets others only
// read, and holds a directory everyone may write. ZooKeeper checks CREATE
// on the parent before it looks whether a node exists, so creating the
// existing directory answers NoAuth, not NodeExists: CreateParents must
// take it as existing and go on, and still fail with zk.ErrNoAuth where a
// missing node cannot be made.
func TestCreateParentsUnderReadOnlyAncestor(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice := connect(t, c.Servers(), conn.WithDigestAuth("alice", "secret"))
	aep := epoch(t, alice)
	p := c.Root() + "/readonly"
	require.NoError(t, connlink.Of(aep).CreateParents(ctx, p))
	_, err := alice.Create(ctx, p, nil, 0, append(zk.DigestACL(zk.PermAll, "alice", "secret"), zk.WorldACL(zk.PermRead)...))
	require.NoError(t, err)
	_, err = alice.Create(ctx, p+"/shared", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	bob := connect(t, c.Servers())
	bep := epoch(t, bob)
	require.NoError(t, connlink.Of(bep).CreateParents(ctx, p+"/shared/a/b/node"), "the missing parents are below the writable directory")
	ok, _, err := bob.Exists(ctx, p+"/shared/a/b")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, connlink.Of(bep).CreateParents(ctx, p+"/shared/node"), "nothing is missing")

	err = connlink.Of(bep).CreateParents(ctx, p+"/other/node")
	assert.ErrorIs(t, err, zk.ErrNoAuth, "a missing parent under the read-only node")

	// The same through a namespace whose own ancestors are read-only.
	nb := connect(t, c.Servers(), conn.WithNamespace(p+"/shared"))
	nep := epoch(t, nb)
	require.NoError(t, connlink.Of(nep).CreateParents(ctx, "/x/y/node"))
	ok, _, err = bob.Exists(ctx, p+"/shared/x/y")
	require.NoError(t, err)
	assert.True(t, ok)
}
