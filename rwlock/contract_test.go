package rwlock_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// newSide returns a constructor of one side (side is
// (*rwlock.RWLock).ReadLock or WriteLock) of a new rwlock.RWLock made with
// opts. Each side is owned per goroutine: the suites get one owning
// goroutine per handle.
func newSide(side func(*rwlock.RWLock) *rwlock.Lock, opts ...lock.Option) locktest.NewLockFunc {
	return func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		t.Helper()
		rw, err := rwlock.New(s, path, opts...)
		if err != nil {
			t.Fatalf("rwlock.New(%q): %v", path, err)
		}
		return locktest.Pin(t, side(rw))
	}
}

// suiteOptions are what both suites know of either side.
func suiteOptions(t *testing.T) []locktest.Option {
	return []locktest.Option{
		locktest.WithCluster(testzk.Shared(t)),
		locktest.WithReentrant(true),
	}
}

// The write lock passes the shared contract, FIFO included.
func TestContractWriteLock(t *testing.T) {
	locktest.Run(t, newSide((*rwlock.RWLock).WriteLock), append(suiteOptions(t), locktest.WithFIFO(true))...)
}

// Both sides survive the shared faults. Every contender has the same host
// name, so that another's node has our name's prefix but not our id: a
// node whose create answer was lost is found by the id in its data. The
// read lock's rival is the write lock, which excludes it.
func TestFaults(t *testing.T) {
	same := rwlock.WithHost("same")
	opts := append(suiteOptions(t), locktest.WithFindByData(true))
	writer := newSide((*rwlock.RWLock).WriteLock, same)
	t.Run("WriteLock", func(t *testing.T) { locktest.RunFaults(t, writer, opts...) })
	t.Run("ReadLock", func(t *testing.T) {
		locktest.RunFaults(t, newSide((*rwlock.RWLock).ReadLock, same), append(opts, locktest.WithRival(writer))...)
	})
}
