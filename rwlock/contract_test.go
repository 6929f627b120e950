package rwlock_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

func newWriteLock(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	rw, err := rwlock.New(s, path)
	if err != nil {
		t.Fatalf("rwlock.New(%q): %v", path, err)
	}
	// Owned per goroutine: the suite gets one owning goroutine per handle.
	return locktest.Pin(t, rw.WriteLock())
}

// The write lock passes the shared contract, FIFO included.
func TestContractWriteLock(t *testing.T) {
	locktest.Run(t, newWriteLock, locktest.WithFIFO(true), locktest.WithCluster(testzk.Shared(t)))
}
