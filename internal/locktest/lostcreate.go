package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// testLostCreateAnswer: the answer to our create is lost with the
// connection (the server applied it). The lock finds its node again (by
// its name, or by its data with WithFindByData): one node, no orphan, and
// the lock is ours; after the release nothing is left.
func (s *suite) testLostCreateAnswer(t *testing.T) {
	f := s.proxied(t, "lost-create")
	warm(t, f.lk)

	before := connlink.Of(f.sess).Stats()
	f.proxy.CutAfterNextWrite()
	l := mustAcquire(t, f.lk, 30*time.Second)
	d := connlink.Of(f.sess).Stats().Sub(before)
	assert.Positive(t, d.Requests[metrics.OpSync], "the create's answer was lost and the node looked for")
	if s.cfg.findByData {
		assert.Positive(t, d.Requests[metrics.OpGet], "found by the id in its data")
	}
	assert.Equal(t, onlyNode(l), ephemeralsOrFail(t, f.direct, f.path), "one node, the lease's: no orphan")
	mustRelease(t, f.lk, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, f.direct, f.path), "nothing left after the release")
}

// testLostCreateWhileQueued: the same while the rival holds: we find our
// node, do not take the holder's for ours, and do not queue behind our own
// node: one node of ours, and we acquire once the holder lets go.
func (s *suite) testLostCreateWhileQueued(t *testing.T) {
	f := s.proxied(t, "lost-create-queued")
	holder := s.newRival(t, f.direct, f.path)
	ctx := Ctx(t, time.Minute)
	mustAcquire(t, holder, 10*time.Second)
	held := ephemeralsOrFail(t, f.direct, f.path)

	before := connlink.Of(f.sess).Stats()
	f.proxy.CutAfterNextWrite()
	res := acquireAsync(ctx, f.lk)
	require.True(t, WaitQueued(t, f.sess, before.WatchesSet, 20*time.Second))
	assert.Positive(t, connlink.Of(f.sess).Stats().Sub(before).Requests[metrics.OpSync], "the create's answer was lost and the node looked for")
	select {
	case r := <-res:
		t.Fatalf("acquired while the other holds: %+v", r)
	default:
	}
	nodes := ephemeralsOrFail(t, f.direct, f.path)
	assert.Len(t, OwnedBy(nodes, sessionID(t, f.sess)), 1, "one node of ours")
	assert.Len(t, nodes, len(held)+1, "the holder's and ours")

	mustRelease(t, holder, 10*time.Second)
	r, ok := await(t, res, 20*time.Second, "acquire after the holder's release")
	require.True(t, ok)
	require.NoError(t, r.err)
	l, ok, err := holder.TryAcquire(ctx)
	assert.NoError(t, err)
	assert.False(t, ok, "the waiter holds")
	assert.Nil(t, l)
	assert.Equal(t, onlyNode(r.lease), ephemeralsOrFail(t, f.direct, f.path))
	mustRelease(t, f.lk, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, f.direct, f.path), "nothing left")
}

// testCutAfterCreate: the connection is cut once the create is on its way,
// losing the answer of the create or of the listing that follows,
// whichever the cut catches. Either way: one node, ours, and no orphan
// after the release.
func (s *suite) testCutAfterCreate(t *testing.T) {
	f := s.proxied(t, "cut-after-create")
	warm(t, f.lk)

	f.proxy.SetLatency(50 * time.Millisecond)
	creates := connlink.Of(f.sess).Stats().Requests[metrics.OpCreate]
	res := acquireAsync(Ctx(t, time.Minute), f.lk)
	WaitFor(t, 10*time.Second, "the create sent", func() bool { return connlink.Of(f.sess).Stats().Requests[metrics.OpCreate] > creates })
	f.proxy.CutAfterNextWrite()
	r, ok := await(t, res, 30*time.Second, "acquire across the cut")
	f.proxy.SetLatency(0)
	require.True(t, ok)
	require.NoError(t, r.err)
	assert.Equal(t, onlyNode(r.lease), ephemeralsOrFail(t, f.direct, f.path), "one node, ours")
	mustRelease(t, f.lk, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, f.direct, f.path), "no orphan")
}

// testCancelDuringCreate: ctx ends while the create is on the wire (a slow
// link): Acquire returns within PastDeadline of its deadline, the handle
// holds nothing, the node the create makes is deleted in the background
// once its answer comes, and the handle acquires normally afterwards.
func (s *suite) testCancelDuringCreate(t *testing.T) {
	f := s.proxied(t, "cancel-create")
	warm(t, f.lk)

	f.proxy.SetLatency(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	l, err := f.lk.Acquire(ctx)
	past := time.Since(deadline)
	t.Logf("returned %v past its deadline", past.Round(time.Millisecond))
	assert.LessOrEqual(t, past, PastDeadline, "Acquire does not wait for the create's answer")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, l)
	assert.ErrorIs(t, f.lk.Release(Ctx(t, 10*time.Second)), lock.ErrNotHeld, "nothing held")
	WaitFor(t, 10*time.Second, "the create on the slow link made its node", func() bool {
		return len(ephemeralsOrFail(t, f.direct, f.path)) > 0
	})
	WaitFor(t, 20*time.Second, "no orphan: the node of the abandoned create deleted", func() bool {
		return len(ephemeralsOrFail(t, f.direct, f.path)) == 0
	})
	f.proxy.SetLatency(0)
	warm(t, f.lk)
	assert.Empty(t, ephemeralsOrFail(t, f.direct, f.path), "nothing left")
}
