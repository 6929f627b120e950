package conn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestLeaseUnwatchedSeesItsEpochEnd: a lease nobody waits on runs no
// goroutine, and still reports the end of its epoch (or, with
// WithSuspendedAsLost, a Suspended) as soon as it is asked: Err,
// GuardedWrite and a Lost called afterwards.
func TestLeaseUnwatchedSeesItsEpochEnd(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	ctx := context.Background()
	for _, suspended := range []bool{false, true} {
		opts := []conn.Option{conn.WithSessionTimeout(4 * time.Second)}
		if suspended {
			opts = append(opts, conn.WithSuspendedAsLost())
		}
		s := connect(t, p.Addrs(), opts...)
		ep := epoch(t, s)
		node, err := connlink.Of(ep).Create(ctx, c.Root()+"-unwatched", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
		require.NoError(t, err)
		l := ep.NewLease(node)
		require.NoError(t, l.Err())
		sub := subscribe(t, s)
		if suspended {
			p.Cut()
			expect(t, sub, 10*time.Second, conn.Suspended)
		} else {
			require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
			expectPast(t, sub, 20*time.Second, conn.Lost)
		}
		assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "suspended as lost: %v", suspended)
		if !suspended {
			assert.ErrorIs(t, l.Err(), conn.ErrSessionExpired)
		}
		_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: c.Root(), Version: -1})
		assert.ErrorIs(t, err, conn.ErrLeaseLost)
		assert.True(t, isClosed(l.Lost()), "Lost is closed once the epoch's signal came")
		s.Close()
	}
}

// TestLeaseNodeCreatedAgainIsNotOurs: a lease whose node was deleted by
// someone else and created again at the same path (by another session)
// before the lease first read it does not take the new node for its own:
// Fence fails with ErrLeaseLost (it never returns the new node's czxid),
// a Lost called afterwards closes, and the watch its first read set on
// the new node is removed from the server.
func TestLeaseNodeCreatedAgainIsNotOurs(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := connect(t, c.Servers())
	ep := epoch(t, s)
	other := connect(t, c.Servers())
	for _, kind := range []string{"fence", "lost"} {
		node, err := connlink.Of(ep).Create(ctx, c.Root()+"-again-"+kind, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
		require.NoError(t, err)
		l := ep.NewLease(node)
		require.NoError(t, other.Delete(ctx, node, -1))
		_, err = other.Create(ctx, node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		if kind == "fence" {
			_, err := l.Fence(ctx)
			require.ErrorIs(t, err, conn.ErrLeaseLost)
			assert.True(t, isClosed(l.Lost()), "Lost closed by the read that found the node not ours")
			continue
		}
		select {
		case <-l.Lost():
		case <-time.After(5 * time.Second):
			t.Fatalf("Lost still open 5 s after it was called on a node created again by another session")
		}
		require.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
		assert.Contains(t, l.Err().Error(), "is not ours")
		require.Eventually(t, func() bool {
			out, err := c.FourLetter(ctx, 0, "wchp")
			return err == nil && !strings.Contains(out, node)
		}, 5*time.Second, 50*time.Millisecond, "the watch set on the other session's node is removed")
		_, err = l.Fence(ctx)
		assert.ErrorIs(t, err, conn.ErrLeaseLost)
	}
}

// TestFenceCutByEpochEndIsLeaseLost: a Fence whose read of the node is cut
// by the end of the epoch (the quorum timer, the path blackholed) fails
// with ErrLeaseLost, as a lost lease's Fence does: a leader's campaign takes
// that as "campaign again", not as an error to return.
func TestFenceCutByEpochEndIsLeaseLost(t *testing.T) {
	c := zktest.New(t)
	ctx := context.Background()
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(2*time.Second))
	ep := epoch(t, s)
	node, err := s.Create(ctx, c.Root()+"-fenced", nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	l := ep.NewLease(node)
	p.Blackhole()
	_, err = l.Fence(ctx)
	require.Error(t, ep.Err(), "the epoch ended during the read")
	assert.ErrorIs(t, err, conn.ErrLeaseLost)
	assert.ErrorIs(t, err, conn.ErrSessionTimeout)
}
