package rwlock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// TestHerdWriters: the write lock's cost per acquire while 5 and 20 queued
// writers drain stays flat: one notification and a couple of requests per
// handoff, whatever the queue's length.
func TestHerdWriters(t *testing.T) {
	c := testzk.Shared(t)
	newLock := func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		rw, err := rwlock.New(s, path)
		if err != nil {
			t.Fatalf("rwlock.New: %v", err)
		}
		return rw.WriteLock() // MeasureHerd acquires and releases each handle on one goroutine
	}
	figs := map[int]locktest.HerdFigures{}
	for _, n := range []int{5, 20} {
		figs[n] = locktest.MeasureHerd(t, c, newLock, n, 20*time.Millisecond)
		t.Logf("write lock: %v", figs[n])
		assert.LessOrEqual(t, figs[n].WatchEvents, 1.5, "about one watch event per acquire with %d waiters", n)
	}
	assert.Less(t, figs[20].TotalRequests, 1.5*figs[5].TotalRequests, "requests per acquire stay flat")
	assert.Less(t, figs[20].WatchEvents, 1.5*figs[5].WatchEvents, "watch events per acquire stay flat")
}

// TestHerdReaders: n readers queued behind a writer are all woken by its
// release — each exactly once, since each can proceed — and hold together;
// per reader, the whole acquire and release costs the same for 5 and 20.
func TestHerdReaders(t *testing.T) {
	c := testzk.Shared(t)
	type fig struct{ requests, events, fromRelease float64 }
	figs := map[int]fig{}
	for _, n := range []int{5, 20} {
		path := testzk.Path(t, c, "lock") + fmt.Sprint(n)
		sessions := testzk.ConnectN(t, c.Servers(), n+1)
		ctx := testzk.Ctx(t, time.Minute)
		w := newRW(t, sessions[n], path)
		_, err := w.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		before := make([]connlink.Stats, n)
		readers := make([]*contender, n)
		for i := range readers {
			before[i] = connlink.Of(sessions[i]).Stats()
			readers[i] = start(ctx, newRW(t, sessions[i], path).ReadLock())
			testzk.Watching(t, sessions[i], before[i].WatchesSet)
		}
		atRelease := make([]connlink.Stats, n)
		for i := range readers {
			atRelease[i] = connlink.Of(sessions[i]).Stats()
		}
		require.NoError(t, w.WriteLock().Release(ctx))
		for i, r := range readers {
			r.wait(t, 10*time.Second, fmt.Sprintf("reader %d", i))
		}
		require.Len(t, testzk.Children(t, sessions[n], path), n, "all %d readers hold together", n)
		for i, r := range readers {
			r.done(t, fmt.Sprintf("reader %d", i))
		}
		var f fig
		for i, s := range sessions[:n] {
			d := connlink.Of(s).Stats().Sub(before[i])
			assert.Equal(t, int64(1), d.WatchEvents, "reader %d of %d: one watch event", i, n)
			f.requests += float64(d.TotalRequests())
			f.events += float64(d.WatchEvents)
			f.fromRelease += float64(connlink.Of(s).Stats().Sub(atRelease[i]).TotalRequests())
		}
		f.requests, f.events, f.fromRelease = f.requests/float64(n), f.events/float64(n), f.fromRelease/float64(n)
		figs[n] = f
		t.Logf("%d readers behind a writer: per reader %.2f requests in all (%.2f from the writer's release on), %.2f watch events",
			n, f.requests, f.fromRelease, f.events)
	}
	// A herd grows with n (every reader re-lists on every change); one
	// request more or less among 20 readers is not one (seen once under CI
	// load: 5.05 against 5.00, not understood).
	assert.InDelta(t, figs[5].requests, figs[20].requests, 0.25, "flat: the same requests per reader")
}
