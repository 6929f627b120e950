package mutex_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// BenchmarkMetrics measures what reporting to metrics hooks costs, on the
// paths where it could show: "off" without WithMetrics, "nop" with hooks
// that do nothing (the library's own cost: clocks, events, calls). Uncontended is one acquire and release through ZooKeeper;
// LocalHandoff is 4 goroutines of one process passing a lock with local
// handoff, where nearly every acquisition costs no round trip.
func BenchmarkMetrics(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []conn.Option
	}{{"off", nil}, {"nop", []conn.Option{conn.WithMetrics(nopHooks)}}} {
		b.Run("Uncontended/"+v.name, func(b *testing.B) {
			c := testzk.Shared(b)
			s := testzk.Connect(b, c.Servers(), v.opts...)
			testzk.BenchUncontended(b, s, newMutex(b, s, testzk.Path(b, c, "lock")))
		})
		b.Run("LocalHandoff/"+v.name, func(b *testing.B) {
			c := testzk.Shared(b)
			s := testzk.Connect(b, c.Servers(), v.opts...)
			localHandoff(b, newMutex(b, s, testzk.Path(b, c, "lock"), lock.WithLocalHandoff(1<<30, 0)), 4)
		})
	}
}

// nopHooks are hooks that do nothing.
var nopHooks = metrics.Hooks{
	State:   func(metrics.Transition) {},
	Request: func(metrics.Request) {},
	Lock:    func(metrics.Lock) {},
	Leader:  func(metrics.Leader) {},
	Watches: func(int) {},
}

// localHandoff has n goroutines acquire and release m until b.N
// acquisitions have been made in all.
func localHandoff(b *testing.B, m *mutex.InterProcessMutex, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	b.ResetTimer()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
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
}
