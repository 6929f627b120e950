package semaphoremutex_test

import (
	"context"
	"sync"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

func newLock(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	m, err := semaphoremutex.New(s, path)
	if err != nil {
		t.Fatalf("semaphoremutex.New(%q): %v", path, err)
	}
	return m
}

// suiteOptions are what both suites know of the mutex.
func suiteOptions(t *testing.T) []locktest.Option {
	return []locktest.Option{
		locktest.WithCluster(testzk.Shared(t)),
		locktest.WithErrors(semaphoremutex.ErrNotHeld, semaphoremutex.ErrReleasePending),
	}
}

// The mutex passes the shared contract, FIFO included: contenders are
// served in the order of the internal lock's queue.
func TestContract(t *testing.T) {
	locktest.Run(t, newLock, append(suiteOptions(t), locktest.WithFIFO(true))...)
}

// The mutex survives the shared faults; its lease is its internal lock
// node, so the suite's node counts hold for it as for the others.
func TestFaults(t *testing.T) {
	locktest.RunFaults(t, newLock, suiteOptions(t)...)
}

// The Mutex is a lock of this module like any other.
var (
	_ locktest.Locker  = (*semaphoremutex.Mutex)(nil)
	_ multilock.Locker = (*semaphoremutex.Mutex)(nil)
)

// A semaphore with two leases keeps its deadlines across a blackhole as
// the mutex does (TestFaults): both the internal lock's create and the
// lease transaction (its 4th request: create, list the locks, list the
// leases, the transaction) are resolved in the background.
func TestSemaphoreDeadlines(t *testing.T) {
	newSem := func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		t.Helper()
		return &semLock{sem: newSemaphore(t, s, path, 2)}
	}
	t.Run("InternalLock", func(t *testing.T) { locktest.RunDeadlines(t, newSem, suiteOptions(t)...) })
	t.Run("LeaseTransaction", func(t *testing.T) {
		locktest.RunDeadlines(t, newSem, append(suiteOptions(t), locktest.WithLostWrite(4))...)
	})
}

// semLock is a Semaphore as a locktest.Locker: it holds at most one of
// the semaphore's leases.
type semLock struct {
	sem *semaphoremutex.Semaphore
	mu  sync.Mutex
	l   *conn.Lease
}

func (s *semLock) Acquire(ctx context.Context) (*conn.Lease, error) {
	l, err := s.sem.Acquire(ctx)
	if err == nil {
		s.mu.Lock()
		s.l = l
		s.mu.Unlock()
	}
	return l, err
}

func (s *semLock) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	l, ok, err := s.sem.TryAcquire(ctx)
	if ok {
		s.mu.Lock()
		s.l = l
		s.mu.Unlock()
	}
	return l, ok, err
}

func (s *semLock) Release(ctx context.Context) error {
	s.mu.Lock()
	l := s.l
	s.l = nil
	s.mu.Unlock()
	return s.sem.Release(ctx, l)
}

func (s *semLock) Path() string { return s.sem.Path() }
