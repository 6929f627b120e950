package locktest

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Pin returns l behind a goroutine of its own that makes every call, ended
// in t.Cleanup. The suite releases from other goroutines than the one that
// acquired, as a handle-owned lock allows; a lock owned per goroutine
// (mutex, rwlock) gets one owning goroutine per handle this way.
func Pin(t testing.TB, l Locker) Locker {
	p := &pinned{l: l, ops: make(chan func())}
	go func() {
		for f := range p.ops {
			f()
		}
	}()
	t.Cleanup(func() { close(p.ops) })
	return p
}

type pinned struct {
	l   Locker
	ops chan func() // closed in t.Cleanup; the goroutine then ends
}

func (p *pinned) do(f func()) {
	done := make(chan struct{})
	p.ops <- func() { f(); close(done) }
	<-done
}

func (p *pinned) Acquire(ctx context.Context) (l *conn.Lease, err error) {
	p.do(func() { l, err = p.l.Acquire(ctx) })
	return l, err
}

func (p *pinned) TryAcquire(ctx context.Context) (l *conn.Lease, ok bool, err error) {
	p.do(func() { l, ok, err = p.l.TryAcquire(ctx) })
	return l, ok, err
}

func (p *pinned) Release(ctx context.Context) (err error) {
	p.do(func() { err = p.l.Release(ctx) })
	return err
}

func (p *pinned) Path() string { return p.l.Path() }
