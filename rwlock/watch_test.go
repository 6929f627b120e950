package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// Two readers of one session (two handles in one process) wait behind one
// writer: the server holds one watch of that session on the writer's
// node, which both share. Cancelling one leaves the watch in place (the
// other still waits on it), and the other is still woken when the writer
// releases; then nothing of the session is watched any more.
func TestSharedWatchOneSession(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	ss := testzk.ConnectN(t, c.Servers(), 2)
	ctx := testzk.Ctx(t, time.Minute)
	w := start(ctx, newRW(t, ss[0], path).WriteLock())
	w.wait(t, 10*time.Second, "writer")
	writerNode := testzk.Children(t, ss[0], path)
	require.Len(t, writerNode, 1)
	sid := testzk.Epoch(t, ss[1]).SessionID()

	before := testzk.WatchesSet(ss[1])
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r1 := start(cctx, newRW(t, ss[1], path).ReadLock())
	r2 := start(ctx, newRW(t, ss[1], path).ReadLock())
	testzk.Eventually(t, 10*time.Second, func() bool { return testzk.WatchesSet(ss[1]) >= before+2 }, "both readers watching")
	want := []string{path + "/" + writerNode[0]}
	assert.Equal(t, want, testzk.DataWatches(t, c, sid), "one shared watch")

	cancel()
	select {
	case r := <-r1.acquired:
		assert.ErrorIs(t, r.err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled reader did not return")
	}
	testzk.Eventually(t, 5*time.Second, func() bool { return len(testzk.Children(t, ss[0], path)) == 2 }, "the cancelled reader's node deleted")
	assert.Equal(t, want, testzk.DataWatches(t, c, sid), "the other reader's watch stays")
	assert.False(t, r2.holds())

	w.done(t, "writer")
	r2.wait(t, 10*time.Second, "the remaining reader")
	r2.done(t, "the remaining reader")
	assert.Empty(t, testzk.DataWatches(t, c, sid))
}
