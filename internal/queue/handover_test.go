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
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestHandoverSkipsStaleEntries: H holds, W1 and W2 queue behind it, so W2's
// only listing shows H before W1. When H and then W1 release, W2 is told by
// W1's handover mark that W1 held the lock, so H's stale entry cannot block
// it: it takes over with no request. Without the mark it must look at H's
// entry first (one getW that finds it gone, with the getACL sent beside
// it; with more stale entries, one getChildren), and, woken by a plain
// deletion, confirm its own node (an exists sent beside the getW).
// Revocable nodes are released without the mark.
func TestHandoverSkipsStaleEntries(t *testing.T) {
	for _, mode := range []string{"marked", "plain delete", "revocable"} {
		mark := mode == "marked"
		t.Run(mode, func(t *testing.T) {
			c := cluster(t)
			path := lockPath(t, c)
			ctx := ctxTimeout(t, 30*time.Second)
			cfg := Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First}
			release := (*Queue).Release
			if mode == "plain delete" {
				release = (*Queue).Withdraw
			}
			var sessions []*conn.Session
			var queues []*Queue
			for i := 0; i < 3; i++ {
				s := connect(t, c.Servers())
				q, err := New(s, path, cfg, Options{Revocable: mode == "revocable"})
				require.NoError(t, err)
				sessions, queues = append(sessions, s), append(queues, q)
			}
			h, w1, w2 := queues[0], queues[1], queues[2]

			hl, err := h.Acquire(ctx)
			require.NoError(t, err)
			acquire := func(q *Queue, n int) <-chan *conn.Lease {
				got := make(chan *conn.Lease, 1)
				go func() {
					l, err := q.Acquire(ctx)
					assert.NoError(t, err)
					got <- l
				}()
				eventually(t, 10*time.Second, func() bool { return len(children(t, sessions[0], path)) == n }, "%d queued", n)
				return got
			}
			got1 := acquire(w1, 2)
			eventually(t, 10*time.Second, func() bool { return connlink.Of(sessions[1]).Stats().WatchesSet == 1 }, "W1 watching")
			got2 := acquire(w2, 3)
			eventually(t, 10*time.Second, func() bool { return connlink.Of(sessions[2]).Stats().WatchesSet == 1 }, "W2 watching")

			require.NoError(t, release(h, ctx, hl))
			l1 := <-got1
			require.NotNil(t, l1)
			before := connlink.Of(sessions[2]).Stats()
			require.NoError(t, release(w1, ctx, l1))
			l2 := <-got2
			require.NotNil(t, l2)
			d := connlink.Of(sessions[2]).Stats().Sub(before)
			if mark {
				assert.Zero(t, d.TotalRequests(), "a marked handover costs the next holder no request: %v", d.Requests)
			} else {
				// getW, and the read of the ACL that goes with it; no read of
				// our node: W1's node is another session's (confirm)
				assert.EqualValues(t, 2, d.TotalRequests(), "a plain delete leaves W2 to check H's stale entry: %v", d.Requests)
				assert.EqualValues(t, 0, d.Requests[metrics.OpExists], "%v", d.Requests)
			}
			assert.EqualValues(t, 1, d.WatchEvents)
			assert.Equal(t, []string{zkpath.Base(l2.Path())}, children(t, sessions[0], path), "W2 alone holds")
			require.NoError(t, release(w2, context.Background(), l2))
			assert.Empty(t, children(t, sessions[0], path))
		})
	}
}

// TestRevokeRequest: another session's write into a sealed node fails with
// zk.ErrNoAuth, and lock.Revoke says lock.ErrNotRevocable (before any write:
// see TestRevokeOwnSealedNode); into a revocable node
// it succeeds, closes the holder's Revoked, and the holder still holds
// (guarded writes pass although the data version is no longer 0) and
// releases.
func TestRevokeRequest(t *testing.T) {
	for _, revocable := range []bool{false, true} {
		t.Run(map[bool]string{false: "sealed", true: "revocable"}[revocable], func(t *testing.T) {
			c := cluster(t)
			path := lockPath(t, c)
			ctx := ctxTimeout(t, 30*time.Second)
			s, other := connect(t, c.Servers()), connect(t, c.Servers())
			cfg := Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First}
			q, err := New(s, path, cfg, Options{Revocable: revocable})
			require.NoError(t, err)
			l, err := q.Acquire(ctx)
			require.NoError(t, err)
			revoked := l.Revoked()
			oep, err := connlink.Of(other).Epoch(ctx)
			require.NoError(t, err)
			_, err = connlink.Of(oep).Set(ctx, l.Path(), []byte("tampered"), -1) // past Session.Set's refusal, to the server
			err2 := lock.Revoke(ctx, other, l.Path())
			if revocable {
				require.NoError(t, err)
				require.NoError(t, err2)
				select {
				case <-revoked:
				case <-ctx.Done():
					t.Fatal("Revoked not closed")
				}
			} else {
				assert.ErrorIs(t, err, zk.ErrNoAuth)
				assert.ErrorIs(t, err2, lock.ErrNotRevocable)
			}
			_, err = l.GuardedWrite(ctx)
			assert.NoError(t, err, "still held")
			assert.NoError(t, l.Err())
			require.NoError(t, q.Release(ctx, l))
			assert.Empty(t, children(t, s, path))
			assert.NoError(t, lock.Revoke(ctx, other, l.Path()), "nothing left to revoke")
		})
	}
}

// TestGrantFrom: a waiter granted by its predecessor's handover mark learns
// that holder's node data, tag included (Grant.From); a waiter granted
// after a Withdraw (a plain delete), or granted at once, learns nothing.
func TestGrantFrom(t *testing.T) {
	for _, withdraw := range []bool{false, true} {
		t.Run(map[bool]string{false: "release", true: "withdraw"}[withdraw], func(t *testing.T) {
			c := cluster(t)
			path := lockPath(t, c)
			ctx := ctxTimeout(t, 30*time.Second)
			cfg := Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First, Tag: "kind-a"}
			hs, ws := connect(t, c.Servers()), connect(t, c.Servers())
			h, err := New(hs, path, cfg, Options{})
			require.NoError(t, err)
			w, err := New(ws, path, cfg, Options{})
			require.NoError(t, err)

			hg, err := h.AcquireGrant(ctx, true)
			require.NoError(t, err)
			assert.False(t, hg.HandedOver, "granted at once")
			got := make(chan Grant, 1)
			go func() {
				g, err := w.AcquireGrant(ctx, true)
				assert.NoError(t, err)
				got <- g
			}()
			eventually(t, 10*time.Second, func() bool { return connlink.Of(ws).Stats().WatchesSet == 1 }, "waiter watching")
			holderID := locknode.ProtectedSchema{Name: "lock"}
			hc, ok := holderID.Parse(zkpath.Base(hg.Lease.Path()))
			require.True(t, ok)

			if withdraw {
				require.NoError(t, h.Withdraw(ctx, hg.Lease))
			} else {
				require.NoError(t, h.Release(ctx, hg.Lease))
			}
			g := <-got
			require.NotNil(t, g.Lease)
			if withdraw {
				assert.False(t, g.HandedOver, "a plain delete promises nothing")
				assert.Zero(t, g.From)
			} else {
				assert.True(t, g.HandedOver)
				assert.Equal(t, "kind-a", g.From.Tag)
				assert.Equal(t, hc.ID, g.From.ID, "the holder's acquire id")
			}
			require.NoError(t, w.Release(ctx, g.Lease))
			assert.Empty(t, children(t, hs, path))
		})
	}
}

// TestHandoverAfterReconnect: a holder's connection breaks and comes back
// on the same session before it releases. go-zookeeper sends the session's
// identity again on the new connection, so the holder can still mark its
// sealed node: the release is one transaction (no fallback to a plain
// delete), and the waiter behind is handed over to with no request.
func TestHandoverAfterReconnect(t *testing.T) {
	c := cluster(t)
	proxy := zktest.NewProxy(t, c.Servers())
	path := lockPath(t, c)
	ctx := ctxTimeout(t, 60*time.Second)
	cfg := Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First}
	hs, ws := connect(t, proxy.Addrs()), connect(t, c.Servers())
	h, err := New(hs, path, cfg, Options{})
	require.NoError(t, err)
	w, err := New(ws, path, cfg, Options{})
	require.NoError(t, err)
	hl, err := h.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan Grant, 1)
	go func() {
		g, err := w.AcquireGrant(ctx, true)
		assert.NoError(t, err)
		got <- g
	}()
	watching(t, ws, 0)

	sub := hs.Subscribe(ctx)
	proxy.Cut()
	for {
		ev, ok := <-sub
		require.True(t, ok, "the subscription ended: %v", ctx.Err())
		if ev.State == conn.Reconnected {
			break
		}
		require.NotEqual(t, conn.Lost, ev.State, "the session survives the cut")
	}
	before := connlink.Of(hs).Stats()
	require.NoError(t, h.Release(ctx, hl))
	d := connlink.Of(hs).Stats().Sub(before)
	assert.EqualValues(t, 1, d.Requests[metrics.OpMulti], "the mark and the delete: %v", d.Requests)
	assert.Zero(t, d.Requests[metrics.OpDelete], "no fallback to a plain delete: %v", d.Requests)
	g := <-got
	require.NotNil(t, g.Lease)
	assert.True(t, g.HandedOver, "the waiter was handed over to")
	require.NoError(t, w.Release(ctx, g.Lease))
}

// TestRevokeOwnSealedNode: a sealed node gives its own session every
// right, so the server would take a revoke from it; lock.Revoke refuses it
// anyway, every time it is asked (lock.ErrNotRevocable), and writes
// nothing: a waiter of another session would take that data change for
// the holder's release. Through its own session a revocable node takes
// the request, as from any other.
func TestRevokeOwnSealedNode(t *testing.T) {
	for _, revocable := range []bool{false, true} {
		t.Run(map[bool]string{false: "sealed", true: "revocable"}[revocable], func(t *testing.T) {
			c := cluster(t)
			path := lockPath(t, c)
			ctx := ctxTimeout(t, 30*time.Second)
			s := connect(t, c.Servers())
			cfg := Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First}
			q, err := New(s, path, cfg, Options{Revocable: revocable})
			require.NoError(t, err)
			l, err := q.Acquire(ctx)
			require.NoError(t, err)
			for range 2 {
				err := lock.Revoke(ctx, s, l.Path())
				_, st, gerr := s.Get(ctx, l.Path())
				require.NoError(t, gerr)
				if revocable {
					assert.NoError(t, err)
					assert.Positive(t, st.Version)
					continue
				}
				assert.ErrorIs(t, err, lock.ErrNotRevocable)
				assert.Zero(t, st.Version, "nothing written into the sealed node")
			}
			require.NoError(t, q.Release(ctx, l))
			assert.Empty(t, children(t, s, path))
		})
	}
}
