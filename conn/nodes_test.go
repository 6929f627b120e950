package conn_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestSessionNodeOps: the Session's node operations read and write nodes,
// under its namespace, and pass the server's errors on.
func TestSessionNodeOps(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain := connect(t, c.Servers())
	_, err := plain.Create(ctx, c.Root(), nil, 0, connlink.Of(plain).ACL())
	require.NoError(t, err)
	s := connect(t, c.Servers(), conn.WithNamespace(c.Root()))

	created, err := s.Create(ctx, "/n", []byte("a"), 0, connlink.Of(s).ACL())
	require.NoError(t, err)
	assert.Equal(t, "/n", created)
	seq, err := s.Create(ctx, "/n/kid-", nil, zk.FlagSequence, connlink.Of(s).ACL())
	require.NoError(t, err)
	assert.Equal(t, "/n/kid-0000000000", seq)
	_, err = s.Create(ctx, "/n", nil, 0, connlink.Of(s).ACL())
	assert.ErrorIs(t, err, zk.ErrNodeExists)

	data, st, err := s.Get(ctx, "/n")
	require.NoError(t, err)
	assert.Equal(t, "a", string(data))
	assert.Equal(t, int32(0), st.Version)
	st, err = s.Set(ctx, "/n", []byte("b"), 0)
	require.NoError(t, err)
	assert.Equal(t, int32(1), st.Version)
	_, err = s.Set(ctx, "/n", []byte("c"), 0)
	assert.ErrorIs(t, err, zk.ErrBadVersion)

	names, _, err := s.Children(ctx, "/n")
	require.NoError(t, err)
	assert.Equal(t, []string{"kid-0000000000"}, names)
	ok, st, err := s.Exists(ctx, "/n")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int32(1), st.Version)

	assert.ErrorIs(t, s.Delete(ctx, "/n", -1), zk.ErrNotEmpty)
	require.NoError(t, s.Delete(ctx, seq, -1))
	require.NoError(t, s.Delete(ctx, "/n", 1))
	ok, _, err = s.Exists(ctx, "/n")
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, err = s.Get(ctx, "/n")
	assert.ErrorIs(t, err, zk.ErrNoNode)
	_, _, err = s.Get(ctx, "no/slash")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
}

// TestSessionSetRefusesRecipeNodes: Set refuses any node named as a
// recipe's contender (ours, Curator's, go-zookeeper's, kazoo's; a lock, a
// lease, an election, a reader or writer), existing or not, and writes
// nothing; a node merely like one is written.
func TestSessionSetRefusesRecipeNodes(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := connect(t, c.Servers())
	_, err := s.Create(ctx, c.Root(), nil, 0, connlink.Of(s).ACL())
	require.NoError(t, err)
	const uuid, hex = "0b3b1ae4-6c5b-4d5e-9f1a-2f5a3c4d5e6f", "0b3b1ae46c5b4d5e9f1a2f5a3c4d5e6f"
	for _, name := range []string{
		"_c_" + uuid + "-lock-0000000001", "_c_" + hex + "-lock-0000000001", hex + "__lock__0000000001",
		"_c_" + uuid + "-lease-0000000002", "_c_" + uuid + "-latch-0000000003",
		"host-R-0000000004", "my-host-W-0000000005",
	} {
		node := c.Root() + "/" + name
		_, err := s.Create(ctx, node, []byte("v0"), 0, connlink.Of(s).ACL())
		require.NoError(t, err)
		_, err = s.Set(ctx, node, []byte("v1"), -1)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, name)
		data, _, err := s.Get(ctx, node)
		require.NoError(t, err)
		assert.Equal(t, "v0", string(data), "%s: nothing written", name)
	}
	for _, name := range []string{"lock-0000000001", "host-X-0000000001", "_c_notauuid-lock-0000000001"} {
		node := c.Root() + "/" + name
		_, err := s.Create(ctx, node, []byte("v0"), 0, connlink.Of(s).ACL())
		require.NoError(t, err)
		_, err = s.Set(ctx, node, []byte("v1"), -1)
		assert.NoError(t, err, name)
	}
}

// TestSessionNodeOpsWaitForAnEpoch: with no live epoch, each node operation
// waits for one, bounded by ctx, and then runs in the next epoch.
func TestSessionNodeOpsWaitForAnEpoch(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	w := c.Root() + "-w"
	for _, n := range []string{w, w + "/gone"} {
		_, err := s.Create(ctx, n, []byte("x"), 0, connlink.Of(s).ACL())
		require.NoError(t, err)
	}
	ep := epoch(t, s)
	p.Blackhole()
	select {
	case <-ep.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the epoch did not end under the blackhole")
	}

	ops := map[string]func(context.Context) error{
		"Get": func(ctx context.Context) error { _, _, err := s.Get(ctx, w); return err },
		"Set": func(ctx context.Context) error { _, err := s.Set(ctx, w, []byte("y"), -1); return err },
		"Create": func(ctx context.Context) error {
			_, err := s.Create(ctx, w+"/new", nil, 0, connlink.Of(s).ACL())
			return err
		},
		"Delete":   func(ctx context.Context) error { return s.Delete(ctx, w+"/gone", -1) },
		"Children": func(ctx context.Context) error { _, _, err := s.Children(ctx, w); return err },
		"Exists":   func(ctx context.Context) error { _, _, err := s.Exists(ctx, w); return err },
	}
	for name, op := range ops {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := op(short)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, "%s with no live epoch", name)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	done := map[string]time.Time{}
	for name, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := op(ctx)
			mu.Lock()
			defer mu.Unlock()
			done[name] = time.Now()
			assert.NoError(t, err, name)
		}()
	}
	healed := time.Now()
	p.Heal()
	wg.Wait()
	for name, at := range done {
		assert.True(t, at.After(healed), "%s returned before a new epoch could begin", name)
	}
	assert.NotEqual(t, ep.SessionID(), epoch(t, s).SessionID(), "they ran in the next epoch")
	data, _, err := s.Get(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, "y", string(data))
	ok, _, err := s.Exists(ctx, w+"/gone")
	require.NoError(t, err)
	assert.False(t, ok)
}
