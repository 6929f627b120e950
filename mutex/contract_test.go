package mutex_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
)

func newLock(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	m, err := mutex.New(s, path)
	if err != nil {
		t.Fatalf("mutex.New(%q): %v", path, err)
	}
	// The mutex is owned per goroutine (its own tests check that); the
	// suite releases from other goroutines, so each handle gets one.
	return locktest.Pin(t, m)
}

// The mutex passes the shared contract, FIFO included.
func TestContract(t *testing.T) {
	locktest.Run(t, newLock, locktest.WithFIFO(true), locktest.WithCluster(testzk.Shared(t)))
}
