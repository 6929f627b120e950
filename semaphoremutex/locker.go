package semaphoremutex

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Locker returns m as a sync.Locker, for code written against one (as
// etcd's concurrency.NewLocker gives). Lock is Acquire(ctx) and Unlock is
// Release, and since sync.Locker has no error return, an error that leaves
// the caller without what it asked for panics, as sync.Mutex does on
// misuse:
//
//   - Lock blocks until m is held. Acquire already outlives a lost
//     session (it starts over in the next one); it fails only when ctx
//     ends, the Session is closed, or the server refuses (e.g. no
//     permission on the path). Lock then panics with that error (match it
//     with errors.Is: context.DeadlineExceeded, conn.ErrClosed, ...), and
//     m is not held.
//   - Unlock releases m, from any goroutine, under
//     context.WithoutCancel(ctx): the end of ctx does not cut a release
//     short. A release whose delete could not be confirmed
//     (lock.ErrReleasePending) is not an error here: m is no longer held
//     and its node is deleted in the background. Unlock of a Mutex that is
//     not held panics with an error matching lock.ErrNotHeld ("unlock of
//     unlocked mutex"); a delete the server refused panics with its error,
//     and m stays held (recover, and Unlock again).
//
// The adapter hides the lease: code that must know when the lock is lost
// (Lease.Lost) or fence its writes (Lease.Fence, Lease.GuardedWrite) uses
// Acquire. Every Locker of m is m: they exclude each other.
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
