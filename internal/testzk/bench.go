package testzk

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// Locker is the acquire/release pair the benchmarks drive.
type Locker interface {
	Acquire(ctx context.Context) (*conn.Lease, error)
	Release(ctx context.Context) error
}

// BenchUncontended times b.N acquire+release rounds of one lock on session
// s, after one round that makes the lock's paths, and reports the
// ZooKeeper requests and watch events per round.
func BenchUncontended(b *testing.B, s *conn.Session, l Locker) {
	BenchContended(b, []*conn.Session{s}, []Locker{l})
}

// BenchContended has every lock (locks[i] on sessions[i]) acquire and
// release over and over, all at once, with an empty critical section, until
// b.N acquisitions have been made in all; an op is one acquisition and its
// release. One round of locks[0] first makes the lock's paths. It reports
// the ZooKeeper requests and watch events per acquisition, and the
// acquisitions per second.
func BenchContended(b *testing.B, sessions []*conn.Session, locks []Locker) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := locks[0].Acquire(ctx); err != nil {
		b.Fatal(err)
	}
	if err := locks[0].Release(ctx); err != nil {
		b.Fatal(err)
	}
	before := make([]connlink.Stats, len(sessions))
	for i, s := range sessions {
		before[i] = connlink.Of(s).Stats()
	}
	b.ResetTimer()
	err := Hammer(ctx, locks, b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	ReportZK(b, sessions, before, b.N)
}

// Hammer has every lock acquire and release, all at once, until total
// acquisitions have been made; it returns the first error.
func Hammer(ctx context.Context, locks []Locker, total int) error {
	var left atomic.Int64
	left.Store(int64(total))
	errs := make(chan error, len(locks))
	var wg sync.WaitGroup
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
	close(errs)
	return <-errs // nil when the channel is empty
}

// ReportZK reports the ZooKeeper requests and watch events per acquisition
// across sessions, from their Stats before and after, and the acquisitions
// per second.
func ReportZK(b *testing.B, sessions []*conn.Session, before []connlink.Stats, acquisitions int) {
	var reqs, events int64
	for i, s := range sessions {
		after := connlink.Of(s).Stats()
		reqs += after.TotalRequests() - before[i].TotalRequests()
		events += after.WatchEvents - before[i].WatchEvents
	}
	b.ReportMetric(float64(reqs)/float64(acquisitions), "zkreqs/op")
	b.ReportMetric(float64(events)/float64(acquisitions), "watchevents/op")
	b.ReportMetric(float64(acquisitions)/b.Elapsed().Seconds(), "acquires/s")
}
