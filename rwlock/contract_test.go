package rwlock_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// pinned runs every call on a lock in one goroutine of its own. The
// contract suite releases from other goroutines than the one that acquired,
// as a handle-owned lock allows; the rwlock is owned per goroutine, which
// its own tests check, so the suite gets one owning goroutine per handle.
type pinned struct {
	lk  *rwlock.Lock
	ops chan func() // closed in t.Cleanup; the goroutine then ends
}

func (p *pinned) do(f func()) {
	done := make(chan struct{})
	p.ops <- func() { f(); close(done) }
	<-done
}

func (p *pinned) Acquire(ctx context.Context) (l *conn.Lease, err error) {
	p.do(func() { l, err = p.lk.Acquire(ctx) })
	return l, err
}

func (p *pinned) TryAcquire(ctx context.Context) (l *conn.Lease, ok bool, err error) {
	p.do(func() { l, ok, err = p.lk.TryAcquire(ctx) })
	return l, ok, err
}

func (p *pinned) Release(ctx context.Context) (err error) {
	p.do(func() { err = p.lk.Release(ctx) })
	return err
}

func (p *pinned) Path() string { return p.lk.Path() }

// pin returns lk behind its own goroutine, ended in t.Cleanup.
func pin(t testing.TB, lk *rwlock.Lock) *pinned {
	p := &pinned{lk: lk, ops: make(chan func())}
	go func() {
		for f := range p.ops {
			f()
		}
	}()
	t.Cleanup(func() { close(p.ops) })
	return p
}

func newWriteLock(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	rw, err := rwlock.New(s, path)
	if err != nil {
		t.Fatalf("rwlock.New(%q): %v", path, err)
	}
	return pin(t, rw.WriteLock())
}

// The write lock passes the shared contract, FIFO included.
func TestContractWriteLock(t *testing.T) {
	locktest.Run(t, newWriteLock, locktest.WithFIFO(true), locktest.WithCluster(testzk.Shared(t)))
}
