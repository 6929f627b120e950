package semaphoremutex_test

import (
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
