package mutex_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// pinned runs every call on a handle in one goroutine of its own. The
// contract suite releases from other goroutines than the one that acquired,
// as a handle-owned lock allows; the mutex is owned per goroutine, which
// its own tests check, so the suite gets one owning goroutine per handle.
type pinned struct {
	m   *mutex.InterProcessMutex
	ops chan func() // closed in t.Cleanup; the goroutine then ends
}

func (p *pinned) do(f func()) {
	done := make(chan struct{})
	p.ops <- func() { f(); close(done) }
	<-done
}

func (p *pinned) Acquire(ctx context.Context) (l *conn.Lease, err error) {
	p.do(func() { l, err = p.m.Acquire(ctx) })
	return l, err
}

func (p *pinned) TryAcquire(ctx context.Context) (l *conn.Lease, ok bool, err error) {
	p.do(func() { l, ok, err = p.m.TryAcquire(ctx) })
	return l, ok, err
}

func (p *pinned) Release(ctx context.Context) (err error) {
	p.do(func() { err = p.m.Release(ctx) })
	return err
}

func (p *pinned) Path() string { return p.m.Path() }

func newLock(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	m, err := mutex.New(s, path)
	if err != nil {
		t.Fatalf("mutex.New(%q): %v", path, err)
	}
	p := &pinned{m: m, ops: make(chan func())}
	go func() {
		for f := range p.ops {
			f()
		}
	}()
	t.Cleanup(func() { close(p.ops) })
	return p
}

// The mutex passes the shared contract, FIFO included.
func TestContract(t *testing.T) {
	locktest.Run(t, newLock, locktest.WithFIFO(true), locktest.WithCluster(testzk.Shared(t)))
}
