package mutex_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// reportZK reports the ZooKeeper requests and watch events per acquisition
// across sessions, from their Stats before and after.
func reportZK(b *testing.B, sessions []*conn.Session, before []conn.Stats, acquisitions int) {
	var reqs, events int64
	for i, s := range sessions {
		after := s.Stats()
		reqs += after.TotalRequests() - before[i].TotalRequests()
		events += after.WatchEvents - before[i].WatchEvents
	}
	b.ReportMetric(float64(reqs)/float64(acquisitions), "zkreqs/op")
	b.ReportMetric(float64(events)/float64(acquisitions), "watchevents/op")
}

func stats(sessions []*conn.Session) []conn.Stats {
	out := make([]conn.Stats, len(sessions))
	for i, s := range sessions {
		out[i] = s.Stats()
	}
	return out
}

// BenchmarkUncontended is one acquire and release with nobody else around.
func BenchmarkUncontended(b *testing.B) {
	c := testzk.Shared(b)
	s := testzk.Connect(b, c.Servers())
	m := newMutex(b, s, testzk.Path(b, c, "lock"))
	ctx := context.Background()
	if _, err := m.Acquire(ctx); err != nil { // make the lock path
		b.Fatal(err)
	}
	if err := m.Release(ctx); err != nil {
		b.Fatal(err)
	}
	before := stats([]*conn.Session{s})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportZK(b, []*conn.Session{s}, before, b.N)
}

// BenchmarkContended10 is 10 sessions taking turns on one lock with an empty
// critical section; an op is one acquisition (and its release). "relist"
// is the same with waiters listing the children after every notification,
// as Curator and zk.Lock do.
func BenchmarkContended10(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []mutex.Option
	}{{"cache", nil}, {"relist", []mutex.Option{mutex.WithRelist(true)}}} {
		b.Run(v.name, func(b *testing.B) { contended(b, 10, v.opts...) })
	}
}

func contended(b *testing.B, n int, opts ...mutex.Option) {
	c := testzk.Shared(b)
	path := testzk.Path(b, c, "lock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sessions := make([]*conn.Session, n)
	ms := make([]*mutex.InterProcessMutex, n)
	for i := range ms {
		sessions[i] = testzk.Connect(b, c.Servers())
		ms[i] = newMutex(b, sessions[i], path, opts...)
	}
	if _, err := ms[0].Acquire(ctx); err != nil { // make the lock path
		b.Fatal(err)
	}
	if err := ms[0].Release(ctx); err != nil {
		b.Fatal(err)
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	errs := make(chan error, n)
	var wg sync.WaitGroup
	before := stats(sessions)
	b.ResetTimer()
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if _, err := m.Acquire(ctx); err != nil {
					errs <- err
					return
				}
				if err := m.Release(ctx); err != nil {
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
	reportZK(b, sessions, before, b.N)
}

// BenchmarkHandoff2 is two sessions handing the lock to each other: each
// holder releases only once the other is queued behind it and watching, so
// every acquisition is a real handoff to a waiter that queued right behind
// the holder. That is where deciding from the first listing saves the
// re-list ("cache" against "relist").
func BenchmarkHandoff2(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []mutex.Option
	}{{"cache", nil}, {"relist", []mutex.Option{mutex.WithRelist(true)}}} {
		b.Run(v.name, func(b *testing.B) { handoff2(b, v.opts...) })
	}
}

func handoff2(b *testing.B, opts ...mutex.Option) {
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
	before := stats(sessions)
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
				for testzk.GetWs(sessions[o]) <= relGetWs[o].Load() && !done[o].Load() {
					time.Sleep(20 * time.Microsecond)
				}
				time.Sleep(300 * time.Microsecond)
				relGetWs[i].Store(testzk.GetWs(sessions[i]))
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
	reportZK(b, sessions, before, b.N)
}
