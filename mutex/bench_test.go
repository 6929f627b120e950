package mutex_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// BenchmarkUncontended is one acquire and release with nobody else around.
func BenchmarkUncontended(b *testing.B) {
	c := testzk.Shared(b)
	s := testzk.Connect(b, c.Servers())
	testzk.BenchUncontended(b, s, newMutex(b, s, testzk.Path(b, c, "lock")))
}

// BenchmarkContended10 is 10 sessions taking turns on one lock with an empty
// critical section; an op is one acquisition (and its release). "relist"
// is the same with waiters listing the children after every notification,
// as Curator and zk.Lock do.
func BenchmarkContended10(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []lock.Option
	}{{"cache", nil}, {"relist", []lock.Option{mutex.WithRelist()}}} {
		b.Run(v.name, func(b *testing.B) { contended(b, 10, v.opts...) })
	}
}

func contended(b *testing.B, n int, opts ...lock.Option) {
	c := testzk.Shared(b)
	path := testzk.Path(b, c, "lock")
	sessions := testzk.ConnectN(b, c.Servers(), n)
	locks := make([]testzk.Locker, n)
	for i, s := range sessions {
		locks[i] = newMutex(b, s, path, opts...)
	}
	testzk.BenchContended(b, sessions, locks)
}

// BenchmarkHandoff2 is two sessions handing the lock to each other: each
// holder releases only once the other is queued behind it and watching, so
// every acquisition is a real handoff to a waiter that queued right behind
// the holder. That is where deciding from the first listing saves the
// re-list ("cache" against "relist").
func BenchmarkHandoff2(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []lock.Option
	}{{"cache", nil}, {"relist", []lock.Option{mutex.WithRelist()}}} {
		b.Run(v.name, func(b *testing.B) { handoff2(b, v.opts...) })
	}
}

func handoff2(b *testing.B, opts ...lock.Option) {
	c := testzk.Shared(b)
	path := testzk.Path(b, c, "lock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sessions := []*conn.Session{testzk.Connect(b, c.Servers()), testzk.Connect(b, c.Servers())}
	ms := []*mutex.InterProcessMutex{newMutex(b, sessions[0], path, opts...), newMutex(b, sessions[1], path, opts...)}
	if _, err := ms[0].Acquire(ctx); err != nil { // make the lock path
		b.Fatal(err)
	}
	if err := ms[0].Release(ctx); err != nil {
		b.Fatal(err)
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	var relGetWs [2]atomic.Int64 // each one's getW count when it last released
	var done [2]atomic.Bool      // each one's loop is over
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	before := make([]connlink.Stats, len(sessions))
	for i, s := range sessions {
		before[i] = connlink.Of(s).Stats()
	}
	b.ResetTimer()
	for i := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done[i].Store(true)
			o := 1 - i
			for left.Add(-1) >= 0 {
				if _, err := ms[i].Acquire(ctx); err != nil {
					errs <- err
					return
				}
				// Hand off only to a waiter: wait until the other has set a
				// watch since its last release (or has stopped), and for
				// that request's answer to come back.
				for testzk.WatchesSet(sessions[o]) <= relGetWs[o].Load() && !done[o].Load() {
					time.Sleep(20 * time.Microsecond)
				}
				time.Sleep(300 * time.Microsecond)
				relGetWs[i].Store(testzk.WatchesSet(sessions[i]))
				if err := ms[i].Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	testzk.ReportZK(b, sessions, before, b.N)
}
