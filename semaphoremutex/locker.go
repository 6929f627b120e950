package semaphoremutex

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Locker returns m as a sync.Locker (as etcd's concurrency.NewLocker
// does): Lock is Acquire(ctx), Unlock is Release (from any goroutine, with
// ctx's values but not its end; a pending release counts as done). Having
// no error return, they panic where the caller would not get what it asked
// for, as sync.Mutex does on misuse: Lock when Acquire fails (ctx ended,
// session closed, server refused; m is not held), Unlock of an unheld m
// (lock.ErrNotHeld) or when the server refuses the delete (m stays held).
// It hides the lease: to watch Lost or fence writes, use Acquire.
func (m *Mutex) Locker(ctx context.Context) sync.Locker {
	return &locker{m: m, ctx: ctx}
}

type locker struct {
	m   *Mutex
	ctx context.Context
}

func (l *locker) Lock() {
	if _, err := l.m.Acquire(l.ctx); err != nil {
		panic(err)
	}
}

func (l *locker) Unlock() {
	err := l.m.Release(context.WithoutCancel(l.ctx))
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		panic(err)
	}
}
