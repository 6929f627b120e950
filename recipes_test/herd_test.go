package recipes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// herdSubject is one lock type in the herd comparison.
type herdSubject struct {
	name    string
	newLock locktest.NewLockFunc
}

// herdSubjects are the lock types compared. Add the other recipes here
// (semaphoremutex, rwlock's write lock) as they land.
var herdSubjects = []herdSubject{
	{"exclusive", func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		l, err := exclusive.New(s, path)
		if err != nil {
			t.Fatalf("exclusive.New: %v", err)
		}
		return l
	}},
	{"mutex", func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		// MeasureHerd acquires and releases each handle on one goroutine,
		// as the per-goroutine mutex requires.
		m, err := mutex.New(s, path)
		if err != nil {
			t.Fatalf("mutex.New: %v", err)
		}
		return m
	}},
}

// herdHold is each holder's critical section: long enough for the waiters
// a release woke to settle back into waiting, as behind any real work.
const herdHold = 20 * time.Millisecond

// TestHerdEffect drains queues of 5 and 20 waiters through the naive lock
// and the sequential mutex on one server and compares the ZooKeeper
// traffic per acquire. The naive lock's grows with the number of waiters
// (every release wakes all of them and each sends a create: O(N) per
// acquire, O(N²) to drain); the mutex's stays flat (one notification and
// one read per handoff).
func TestHerdEffect(t *testing.T) {
	c := zktest.New(t)
	waiters := []int{5, 20}
	figures := map[string]map[int]locktest.HerdFigures{}
	for _, sub := range herdSubjects {
		figures[sub.name] = map[int]locktest.HerdFigures{}
		for _, n := range waiters {
			h := locktest.MeasureHerd(t, c, sub.newLock, n, herdHold)
			figures[sub.name][n] = h
			t.Logf("%-9s %v", sub.name, h)
		}
	}

	ex, mu := figures["exclusive"], figures["mutex"]
	assert.Greater(t, ex[20].WatchEvents, 2*ex[5].WatchEvents, "exclusive: watch events per acquire grow with the waiters")
	assert.Greater(t, ex[20].TotalRequests, 2*ex[5].TotalRequests, "exclusive: requests per acquire grow with the waiters")
	for _, n := range waiters {
		assert.LessOrEqual(t, mu[n].WatchEvents, 1.5, "mutex: about one watch event per acquire with %d waiters", n)
	}
	assert.Less(t, mu[20].TotalRequests, 1.5*mu[5].TotalRequests, "mutex: requests per acquire stay flat")
	assert.Greater(t, ex[20].WatchEvents, 3*mu[20].WatchEvents, "with 20 waiters the naive lock costs several times the mutex")
}
