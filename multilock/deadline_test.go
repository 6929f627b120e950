package multilock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/multilock"
)

// multiLocker is a MultiLock over two mutexes, <path>/a and <path>/b, as a
// locktest.Locker: Acquire returns the first lease. It has no TryAcquire.
type multiLocker struct {
	m    *multilock.MultiLock
	path string
}

func newMultiLocker(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	m := newMulti(t, newMutex(t, s, path+"/a"), newMutex(t, s, path+"/b"))
	// The mutexes are owned per goroutine: one goroutine makes every call.
	return locktest.Pin(t, &multiLocker{m: m, path: path})
}

func (l *multiLocker) Acquire(ctx context.Context) (*conn.Lease, error) {
	leases, err := l.m.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

func (l *multiLocker) TryAcquire(context.Context) (*conn.Lease, bool, error) {
	return nil, false, errors.New("multilock has no TryAcquire")
}

func (l *multiLocker) Release(ctx context.Context) error { return l.m.Release(ctx) }

func (l *multiLocker) Path() string { return l.path }

// A MultiLock's Acquire keeps its deadline across a blackhole, and leaves
// no node once the connection or the session recovers: blackholed at the
// first lock's create, or at the second's (its 3rd request: create and
// list for the first lock), when the first, held, is rolled back.
func TestDeadlines(t *testing.T) {
	opts := []locktest.Option{locktest.WithoutTryAcquire()}
	t.Run("FirstLock", func(t *testing.T) { locktest.RunDeadlines(t, newMultiLocker, opts...) })
	t.Run("SecondLock", func(t *testing.T) {
		locktest.RunDeadlines(t, newMultiLocker, append(opts, locktest.WithLostWrite(3))...)
	})
}

// A MultiLock's waiter that gives up leaves no watch on the server (nor
// node), while the holder holds and the sessions are open.
func TestAbandonLeavesNoWatch(t *testing.T) {
	locktest.RunAbandon(t, newMultiLocker, locktest.WithoutTryAcquire())
}
