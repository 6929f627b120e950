package semaphoremutex_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// BenchmarkMutexUncontended is one acquire and release with nobody else
// around.
func BenchmarkMutexUncontended(b *testing.B) {
	c := testzk.Shared(b)
	s := testzk.Connect(b, c.Servers())
	testzk.BenchUncontended(b, s, newMutex(b, s, testzk.Path(b, c, "sem")))
}

// BenchmarkMutexContended10 is 10 sessions taking turns on one Mutex with
// an empty critical section; an op is one acquisition (and its release).
func BenchmarkMutexContended10(b *testing.B) {
	contended(b, 10, func(s *conn.Session, path string) testzk.Locker { return newMutex(b, s, path) })
}

// BenchmarkSemaphore3Contended10 is 10 sessions sharing 3 leases, each
// returning its lease at once.
func BenchmarkSemaphore3Contended10(b *testing.B) {
	contended(b, 10, func(s *conn.Session, path string) testzk.Locker {
		return &semLocker{sem: newSemaphore(b, s, path, 3)}
	})
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

func (l *semLocker) Release(ctx context.Context) error { return l.sem.ReturnLease(ctx, l.lease) }

func contended(b *testing.B, n int, newLocker func(*conn.Session, string) testzk.Locker) {
	c := testzk.Shared(b)
	path := testzk.Path(b, c, "sem")
	sessions := testzk.ConnectN(b, c.Servers(), n)
	locks := make([]testzk.Locker, n)
	for i, s := range sessions {
		locks[i] = newLocker(s, path)
	}
	testzk.BenchContended(b, sessions, locks)
}
