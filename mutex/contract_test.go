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

// suiteOptions are what both suites know of the mutex.
func suiteOptions(t *testing.T) []locktest.Option {
	return []locktest.Option{
		locktest.WithCluster(testzk.Shared(t)),
		locktest.WithReentrant(true),
	}
}

// The mutex passes the shared contract, FIFO included.
func TestContract(t *testing.T) {
	locktest.Run(t, newLock, append(suiteOptions(t), locktest.WithFIFO(true))...)
}

// The mutex survives the shared faults.
func TestFaults(t *testing.T) {
	locktest.RunFaults(t, newLock, suiteOptions(t)...)
}
