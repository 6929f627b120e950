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

// The mutex passes the shared contract, FIFO included: contenders are
// served in the order of the internal lock's queue.
func TestContract(t *testing.T) {
	locktest.Run(t, newLock, locktest.WithFIFO(true), locktest.WithCluster(testzk.Shared(t)))
}

// The Mutex is a lock of this module like any other.
var (
	_ locktest.Locker  = (*semaphoremutex.Mutex)(nil)
	_ multilock.Locker = (*semaphoremutex.Mutex)(nil)
)
