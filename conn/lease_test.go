package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
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
		node, err := ep.Create(ctx, c.Root()+"-unwatched", nil, zk.FlagEphemeral, s.ACL())
		require.NoError(t, err)
		l := ep.NewLease(node)
		require.NoError(t, l.Err())
		sub := s.Subscribe()
		if suspended {
			p.Cut()
			expect(t, sub, 10*time.Second, conn.Suspended)
		} else {
			require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
			expectPast(t, sub, 20*time.Second, conn.Lost)
		}
		sub.Close()
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
