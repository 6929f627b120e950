package semaphoremutex_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
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
	_ locktest.Locker = (*semaphoremutex.Mutex)(nil)
	_ lock.Locker     = (*semaphoremutex.Mutex)(nil)
)

// A semaphore with two leases keeps its deadlines across a blackhole as
// the mutex does (TestFaults): both the internal lock's create and the
// lease transaction (its 4th request: create, list the locks, list the
// leases, the transaction) are resolved in the background.
func TestSemaphoreDeadlines(t *testing.T) {
	newSem := func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		t.Helper()
		return &semLock{sem: newSemaphore(t, s, path, 2), path: path}
	}
	t.Run("InternalLock", func(t *testing.T) { locktest.RunDeadlines(t, newSem, suiteOptions(t)...) })
	t.Run("LeaseTransaction", func(t *testing.T) {
		locktest.RunDeadlines(t, newSem, append(suiteOptions(t), locktest.WithLostWrite(4))...)
	})
}

// semLock is a Semaphore as a locktest.Locker: it holds at most one of
// the semaphore's leases.
type semLock struct {
	sem  *semaphoremutex.Semaphore
	path string // the semaphore's
	mu   sync.Mutex
	l    *conn.Lease
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
	return s.sem.ReturnLease(ctx, l)
}

func (s *semLock) Path() string { return s.path }

// A waiter of a two-lease semaphore queued behind a holder of both leases
// watches lease nodes; giving up, it leaves no watch on the server.
func TestSemaphoreAbandonLeavesNoWatch(t *testing.T) {
	newSem := func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		t.Helper()
		return &semLock{sem: newSemaphore(t, s, path, 2), path: path}
	}
	full := func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		t.Helper()
		return &fullSem{sem: newSemaphore(t, s, path, 2), path: path}
	}
	locktest.RunAbandon(t, newSem, append(suiteOptions(t), locktest.WithRival(full))...)
}

// fullSem holds both leases of a two-lease semaphore, as a
// locktest.Locker (Acquire returns the first; no TryAcquire).
type fullSem struct {
	sem    *semaphoremutex.Semaphore
	path   string // the semaphore's
	leases []*conn.Lease
}

func (f *fullSem) Acquire(ctx context.Context) (*conn.Lease, error) {
	for len(f.leases) < 2 {
		l, err := f.sem.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		f.leases = append(f.leases, l)
	}
	return f.leases[0], nil
}

func (f *fullSem) TryAcquire(context.Context) (*conn.Lease, bool, error) {
	return nil, false, errors.New("fullSem has no TryAcquire")
}

func (f *fullSem) Release(ctx context.Context) error {
	var errs []error
	for _, l := range f.leases {
		errs = append(errs, f.sem.ReturnLease(ctx, l))
	}
	f.leases = nil
	return errors.Join(errs...)
}

func (f *fullSem) Path() string { return f.path }
