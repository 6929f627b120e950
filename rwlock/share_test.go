package rwlock_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// TestReadersShare: ten readers, each on its own session, hold the lock at
// once; a writer gets in only after the last one left.
func TestReadersShare(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	sessions := testzk.ConnectN(t, c.Servers(), 11)
	ctx := testzk.Ctx(t, time.Minute)

	readers := make([]*contender, 10)
	for i := range readers {
		readers[i] = start(ctx, newRW(t, sessions[i], path).ReadLock())
	}
	for i, r := range readers {
		r.wait(t, 10*time.Second, fmt.Sprintf("reader %d", i))
	}
	assert.Len(t, testzk.Children(t, sessions[10], path), 10, "ten readers hold the lock together")

	w := newRW(t, sessions[10], path).WriteLock()
	_, ok, err := w.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "no writer while readers hold")
	gets := testzk.WatchesSet(sessions[10])
	cw := start(ctx, w)
	testzk.Watching(t, sessions[10], gets)
	for i, r := range readers {
		assert.False(t, cw.holds(), "writer in while reader %d still holds", i)
		r.done(t, fmt.Sprintf("reader %d", i))
	}
	cw.wait(t, 10*time.Second, "writer")
	assert.Len(t, testzk.Children(t, sessions[10], path), 1)
	cw.done(t, "writer")
	assert.Empty(t, testzk.Children(t, sessions[10], path))
}

// TestWriterExcludes: while a writer holds the lock, neither a reader nor
// another writer gets in, by TryAcquire or by waiting; they do after.
func TestWriterExcludes(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	sessions := testzk.ConnectN(t, c.Servers(), 3)
	ctx := testzk.Ctx(t, time.Minute)
	w := newRW(t, sessions[0], path)
	r, w2 := newRW(t, sessions[1], path), newRW(t, sessions[2], path)
	_, err := w.WriteLock().Acquire(ctx)
	require.NoError(t, err)

	for _, lk := range []*rwlock.Lock{r.ReadLock(), w2.WriteLock()} {
		_, ok, err := lk.TryAcquire(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "%v beside a writer", lk)
	}
	gr, gw := testzk.WatchesSet(sessions[1]), testzk.WatchesSet(sessions[2])
	cr := start(ctx, r.ReadLock())
	testzk.Watching(t, sessions[1], gr)
	cw := start(ctx, w2.WriteLock())
	testzk.Watching(t, sessions[2], gw)
	assert.False(t, cr.holds())
	assert.False(t, cw.holds())
	require.NoError(t, w.WriteLock().Release(ctx))
	cr.wait(t, 10*time.Second, "reader")
	settled(t, sessions[2], path)
	assert.False(t, cw.holds(), "the second writer waits for the reader")
	cr.done(t, "reader")
	cw.wait(t, 10*time.Second, "second writer")
	cw.done(t, "second writer")
	assert.Empty(t, testzk.Children(t, sessions[0], path))
}

// span is one hold in the mixed-load history.
type span struct {
	who        int
	write      bool
	start, end time.Time
}

// writerOverlaps returns the pairs of spans that overlap where at least
// one is a writer's. Pure.
func writerOverlaps(h []span) [][2]span {
	h = append([]span(nil), h...)
	sort.Slice(h, func(i, j int) bool { return h[i].start.Before(h[j].start) })
	var out [][2]span
	for i := range h {
		for j := i + 1; j < len(h) && h[j].start.Before(h[i].end); j++ {
			if h[i].write || h[j].write {
				out = append(out, [2]span{h[i], h[j]})
			}
		}
	}
	return out
}

func TestWriterOverlaps(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s, e int) (time.Time, time.Time) {
		return t0.Add(time.Duration(s) * time.Millisecond), t0.Add(time.Duration(e) * time.Millisecond)
	}
	mk := func(who int, w bool, s, e int) span {
		a, b := at(s, e)
		return span{who, w, a, b}
	}
	assert.Empty(t, writerOverlaps([]span{mk(1, false, 0, 10), mk(2, false, 5, 15), mk(3, true, 15, 20), mk(4, false, 20, 30)}))
	assert.Len(t, writerOverlaps([]span{mk(1, false, 0, 10), mk(2, true, 9, 12)}), 1)
	assert.Len(t, writerOverlaps([]span{mk(1, true, 0, 100), mk(2, false, 10, 20), mk(3, false, 30, 40)}), 2)
}

// TestMixedLoad: eight sessions, a few hundred acquisitions, about one in
// ten a write. Writers never overlap anything; readers do share.
func TestMixedLoad(t *testing.T) {
	const (
		n     = 8
		total = 320
	)
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "lock")
	sessions := testzk.ConnectN(t, c.Servers(), n)
	ctx := testzk.Ctx(t, time.Minute)
	var (
		left             atomic.Int64
		readers, writers atomic.Int32
		maxReaders       atomic.Int32
		mu               sync.Mutex // guards history and errs
		history          []span
		errs             []error
		wg               sync.WaitGroup
	)
	left.Store(total)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	begin := time.Now()
	for i := range n {
		rw := newRW(t, sessions[i], path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := left.Add(-1); k >= 0; k = left.Add(-1) {
				write := k%10 == 3
				lk := rw.ReadLock()
				if write {
					lk = rw.WriteLock()
				}
				if _, err := lk.Acquire(ctx); err != nil {
					fail(fmt.Errorf("%d: %v: %w", i, lk, err))
					return
				}
				s := span{who: i, write: write, start: time.Now()}
				if write {
					if w, r := writers.Add(1), readers.Load(); w != 1 || r != 0 {
						fail(fmt.Errorf("%d: writer in with %d writers and %d readers", i, w-1, r))
					}
				} else {
					r := readers.Add(1)
					if w := writers.Load(); w != 0 {
						fail(fmt.Errorf("%d: reader in with %d writers", i, w))
					}
					for m := maxReaders.Load(); r > m && !maxReaders.CompareAndSwap(m, r); m = maxReaders.Load() {
					}
				}
				time.Sleep(time.Millisecond) // the critical section's work
				if write {
					writers.Add(-1)
				} else {
					readers.Add(-1)
				}
				s.end = time.Now()
				mu.Lock()
				history = append(history, s)
				mu.Unlock()
				if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
					fail(fmt.Errorf("%d: release %v: %w", i, lk, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	nw := 0
	for _, s := range history {
		if s.write {
			nw++
		}
	}
	require.Len(t, history, total)
	for _, p := range writerOverlaps(history) {
		t.Errorf("overlap: %+v and %+v", p[0], p[1])
	}
	assert.Greater(t, maxReaders.Load(), int32(1), "readers shared the lock")
	assert.Empty(t, testzk.Children(t, sessions[0], path), "nothing left behind")
	t.Logf("%d acquisitions (%d writes) over %d sessions in %v; up to %d readers at once",
		total, nw, n, time.Since(begin).Round(time.Millisecond), maxReaders.Load())
}
