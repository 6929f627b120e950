package semaphoremutex_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// report reports the ZooKeeper requests and watch events per acquisition
// across sessions, from their Stats before and after, and the acquisitions
// per second.
func report(b *testing.B, sessions []*conn.Session, before []conn.Stats, acquisitions int) {
	var reqs, events int64
	for i, s := range sessions {
		after := s.Stats()
		reqs += after.TotalRequests() - before[i].TotalRequests()
		events += after.WatchEvents - before[i].WatchEvents
	}
	b.ReportMetric(float64(reqs)/float64(acquisitions), "zkreqs/op")
	b.ReportMetric(float64(events)/float64(acquisitions), "watchevents/op")
	b.ReportMetric(float64(acquisitions)/b.Elapsed().Seconds(), "acquires/s")
}

func stats(sessions []*conn.Session) []conn.Stats {
	out := make([]conn.Stats, len(sessions))
	for i, s := range sessions {
		out[i] = s.Stats()
	}
	return out
}

// BenchmarkMutexUncontended is one acquire and release with nobody else
// around.
func BenchmarkMutexUncontended(b *testing.B) {
	c := testzk.Shared(b)
	s := testzk.Connect(b, c.Servers())
	m := newMutex(b, s, testzk.Path(b, c, "sem"))
	ctx := context.Background()
	if _, err := m.Acquire(ctx); err != nil { // make the paths
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
	report(b, []*conn.Session{s}, before, b.N)
}

// BenchmarkMutexContended10 is 10 sessions taking turns on one Mutex with
// an empty critical section; an op is one acquisition (and its release).
func BenchmarkMutexContended10(b *testing.B) {
	contended(b, 10, func(s *conn.Session, path string) locker { return newMutex(b, s, path) })
}

// BenchmarkSemaphore3Contended10 is 10 sessions sharing 3 leases, each
// returning its lease at once.
func BenchmarkSemaphore3Contended10(b *testing.B) {
	contended(b, 10, func(s *conn.Session, path string) locker {
		return &semLocker{sem: newSemaphore(b, s, path, 3)}
	})
}

// locker is what the contended benchmarks drive.
type locker interface {
	Acquire(ctx context.Context) (*conn.Lease, error)
	Release(ctx context.Context) error
}

// semLocker gives a Semaphore the Mutex's method set, for one goroutine:
// Release returns the lease its last Acquire took.
type semLocker struct {
	sem   *semaphoremutex.Semaphore
	lease *conn.Lease
}

func (l *semLocker) Acquire(ctx context.Context) (*conn.Lease, error) {
	var err error
	l.lease, err = l.sem.Acquire(ctx)
	return l.lease, err
}

func (l *semLocker) Release(ctx context.Context) error { return l.sem.Release(ctx, l.lease) }

func contended(b *testing.B, n int, newLocker func(*conn.Session, string) locker) {
	c := testzk.Shared(b)
	path := testzk.Path(b, c, "sem")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sessions := testzk.ConnectN(b, c.Servers(), n)
	locks := make([]locker, n)
	for i := range locks {
		locks[i] = newLocker(sessions[i], path)
	}
	if _, err := locks[0].Acquire(ctx); err != nil { // make the paths
		b.Fatal(err)
	}
	if err := locks[0].Release(ctx); err != nil {
		b.Fatal(err)
	}
	before := stats(sessions)
	b.ResetTimer()
	hammer(b, ctx, locks, b.N)
	b.StopTimer()
	report(b, sessions, before, b.N)
}

// hammer has every lock acquire and release, all at once, until total
// acquisitions have been made.
func hammer(b testing.TB, ctx context.Context, locks []locker, total int) {
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
	for err := range errs {
		b.Fatal(err)
	}
}
