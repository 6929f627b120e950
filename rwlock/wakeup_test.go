package rwlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// TestWakeups: the queue W1 (holding), R1, W2, R2, R3, each on its own
// session and queued in that order. Each release wakes only the waiters
// that can now proceed, counted in watch events per session:
//
//	release W1 → R1 (1 event); W2, R2, R3 hear nothing
//	release R1 → W2 (1 event); R2, R3 hear nothing
//	release W2 → R2 and R3 (1 event each), who then hold together
func TestWakeups(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	names := []string{"W1", "R1", "W2", "R2", "R3"}
	sessions := testzk.ConnectN(t, c.Servers(), len(names))
	obs := testzk.Connect(t, c.Servers())
	ctx := testzk.Ctx(t, time.Minute)

	cs := make([]*contender, len(names))
	for i, name := range names {
		rw := newRW(t, sessions[i], path)
		lk := rw.ReadLock()
		if name[0] == 'W' {
			lk = rw.WriteLock()
		}
		gets := testzk.WatchesSet(sessions[i])
		cs[i] = start(ctx, lk)
		if i == 0 {
			cs[0].wait(t, 10*time.Second, "W1")
			continue
		}
		testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, obs, path)) == i+1 }, "%s queued", name)
		testzk.Watching(t, sessions[i], gets)
	}
	for i, name := range names[1:] {
		assert.False(t, cs[i+1].holds(), "%s holds too early", name)
	}

	base := make([]connlink.Stats, len(names))
	for i, s := range sessions {
		base[i] = connlink.Of(s).Stats()
	}
	// got is the watch events of each waiter since the queue was complete,
	// once every session has received what the server sent it so far.
	got := func() map[string]int64 {
		out := map[string]int64{}
		for i, s := range sessions[1:] {
			settled(t, s, path)
			out[names[i+1]] = connlink.Of(s).Stats().Sub(base[i+1]).WatchEvents
		}
		return out
	}

	cs[0].done(t, "W1")
	cs[1].wait(t, 10*time.Second, "R1")
	afterW1 := got()
	assert.Equal(t, map[string]int64{"R1": 1, "W2": 0, "R2": 0, "R3": 0}, afterW1, "release of W1")
	for i := 2; i < len(cs); i++ {
		assert.False(t, cs[i].holds(), "%s got in beside R1", names[i])
	}

	cs[1].done(t, "R1")
	cs[2].wait(t, 10*time.Second, "W2")
	afterR1 := got()
	assert.Equal(t, map[string]int64{"R1": 1, "W2": 1, "R2": 0, "R3": 0}, afterR1, "release of R1")
	assert.False(t, cs[3].holds(), "R2 got in beside W2")
	assert.False(t, cs[4].holds(), "R3 got in beside W2")

	cs[2].done(t, "W2")
	cs[3].wait(t, 10*time.Second, "R2")
	cs[4].wait(t, 10*time.Second, "R3")
	require.Len(t, testzk.Children(t, obs, path), 2, "R2 and R3 hold together")
	afterW2 := got()
	assert.Equal(t, map[string]int64{"R1": 1, "W2": 1, "R2": 1, "R3": 1}, afterW2, "release of W2")
	cs[3].done(t, "R2")
	cs[4].done(t, "R3")
	assert.Empty(t, testzk.Children(t, obs, path))
	t.Logf("watch events per waiter (cumulative): after W1's release %v; after R1's %v; after W2's %v", afterW1, afterR1, afterW2)
}
