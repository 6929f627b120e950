package queue

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

// TestNoGrantInAnExpiredSession: a waiter queued behind a node of its own
// session, when the server expires the session. The expiry deletes both
// nodes in one transaction, and the server that holds the session's
// connection notifies its watches before it closes the connection: the
// waiter is told that its predecessor is gone before it can know that its
// session is. It must not be granted in that session (its own node went
// in the same transaction): its read of its own node (confirm) fails, and
// it is granted in the next session instead.
//
// The session is connected to one server of an ensemble and expired
// through another (zktest.ExpireEpoch), so that its connection is still
// open when the expiry is applied; whether the server writes the
// notification before closing the connection is up to its network layer
// (with NIO, most of the time), so the test repeats until the waiter's
// session was told twice, as a watch of the test's own on the
// predecessor, on the same connection, shows.
func TestNoGrantInAnExpiredSession(t *testing.T) {
	c := zktest.New(t, zktest.WithServers(3))
	srv := c.Servers()
	s := connect(t, srv[:1])
	path := lockPath(t, c)
	q := mutexQueue(t, s, path)
	told := 0
	for try := 0; told < 2; try++ {
		require.Less(t, try, 30, "the server never notified the session's watches before closing it (%d of %d)", told, try)
		ctx := ctxTimeout(t, time.Minute)
		hl, err := q.Acquire(ctx)
		require.NoError(t, err)
		ep := hl.Epoch()
		watches := watchesSet(s)
		got := make(chan *conn.Lease, 1)
		go func() {
			l, err := q.Acquire(ctx)
			assert.NoError(t, err)
			got <- l
		}()
		watching(t, s, watches)
		_, _, ch, err := connlink.Of(ep).GetW(ctx, hl.Path())
		require.NoError(t, err)

		require.NoError(t, zktest.ExpireEpoch(ctx, srv[1], ep))
		ev := <-ch
		l := <-got
		require.NotNil(t, l)
		if ev.Type == zk.EventNodeDeleted {
			told++
		}
		t.Logf("try %d: the session was told %v; granted in session 0x%x (expired: 0x%x)", try, ev.Type, l.Epoch().SessionID(), ep.SessionID())
		assert.NotEqual(t, ep.SessionID(), l.Epoch().SessionID(), "granted in the session whose expiry deleted the waiter's node")
		require.NoError(t, q.Release(ctx, l))
		require.NoError(t, q.Release(context.WithoutCancel(ctx), hl)) // lost: gone with the session
	}
}
