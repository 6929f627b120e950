package rwlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// reportZK reports the ZooKeeper requests and watch events per acquisition
// across sessions, from their Stats before and after.
func reportZK(b *testing.B, sessions []*conn.Session, before []conn.Stats, acquisitions int) {
	var reqs, events int64
	for i, s := range sessions {
		d := s.Stats().Sub(before[i])
		reqs += d.TotalRequests()
		events += d.WatchEvents
	}
	b.ReportMetric(float64(reqs)/float64(acquisitions), "zkreqs/op")
	b.ReportMetric(float64(events)/float64(acquisitions), "watchevents/op")
}

// BenchmarkWriteContended10 is 10 sessions taking turns on the write lock
// with an empty critical section; an op is one acquisition (and its
// release).
func BenchmarkWriteContended10(b *testing.B) {
	contended(b, 10, func(rw *rwlock.RWLock) *rwlock.Lock { return rw.WriteLock() })
}

// BenchmarkReadContended10 is 10 sessions taking the read lock over and
// over on one path; they share it, so nobody waits: an op costs a create, a
// listing and a delete.
func BenchmarkReadContended10(b *testing.B) {
	contended(b, 10, func(rw *rwlock.RWLock) *rwlock.Lock { return rw.ReadLock() })
}

func contended(b *testing.B, n int, side func(*rwlock.RWLock) *rwlock.Lock) {
	c := testzk.Shared(b)
	path := testzk.Path(b, c, "lock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sessions := testzk.ConnectN(b, c.Servers(), n)
	locks := make([]*rwlock.Lock, n)
	for i := range locks {
		locks[i] = side(newRW(b, sessions[i], path))
	}
	if _, err := locks[0].Acquire(ctx); err != nil { // make the lock path
		b.Fatal(err)
	}
	if err := locks[0].Release(ctx); err != nil {
		b.Fatal(err)
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	errs := make(chan error, n)
	var wg sync.WaitGroup
	before := make([]conn.Stats, n)
	for i, s := range sessions {
		before[i] = s.Stats()
	}
	b.ResetTimer()
	for _, lk := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if _, err := lk.Acquire(ctx); err != nil {
					errs <- err
					return
				}
				if err := lk.Release(ctx); err != nil {
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
