package exclusive_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
)

func newLock(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	l, err := exclusive.New(s, path)
	if err != nil {
		t.Fatalf("exclusive.New(%q): %v", path, err)
	}
	return l
}

// The naive lock passes the shared contract, except FIFO: it is unfair by
// design.
func TestContract(t *testing.T) {
	locktest.Run(t, newLock, locktest.WithFIFO(false))
}

// The naive lock keeps its deadlines across a blackhole, and leaves no
// node once the connection or the session recovers.
func TestDeadlines(t *testing.T) {
	locktest.RunDeadlines(t, newLock)
}
