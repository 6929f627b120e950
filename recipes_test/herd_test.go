package recipes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// herdSubject is one lock type in the herd comparison.
type herdSubject struct {
	name    string
	newLock locktest.NewLockFunc
	// watches is how many watch events an acquire should cost whatever the
	// number of waiters: one per queue the recipe waits in.
	watches float64
}

// herdSubjects are the lock types compared: the naive lock and every
// exclusive sequential recipe.
var herdSubjects = []herdSubject{
	{"exclusive", func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		l, err := exclusive.New(s, path)
		if err != nil {
			t.Fatalf("exclusive.New: %v", err)
		}
		return l
	}, 0},
	{"mutex", func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		// MeasureHerd acquires and releases each handle on one goroutine,
		// as the per-goroutine mutex requires.
		m, err := mutex.New(s, path)
		if err != nil {
			t.Fatalf("mutex.New: %v", err)
		}
		return m
	}, 1},
	{"rwlock-w", func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		rw, err := rwlock.New(s, path)
		if err != nil {
			t.Fatalf("rwlock.New: %v", err)
		}
		return rw.WriteLock()
	}, 1},
	{"semmutex", func(t *testing.T, s *conn.Session, path string) locktest.Locker {
		m, err := semaphoremutex.New(s, path)
		if err != nil {
			t.Fatalf("semaphoremutex.New: %v", err)
		}
		return m
	}, 1}, // one lease: the internal lock is the lease (no second queue)
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
	c := newZK(t)
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

	ex := figures["exclusive"]
	assert.Greater(t, ex[20].WatchEvents, 2*ex[5].WatchEvents, "exclusive: watch events per acquire grow with the waiters")
	assert.Greater(t, ex[20].TotalRequests, 2*ex[5].TotalRequests, "exclusive: requests per acquire grow with the waiters")
	for _, sub := range herdSubjects[1:] {
		f := figures[sub.name]
		for _, n := range waiters {
			assert.LessOrEqual(t, f[n].WatchEvents, sub.watches+0.5, "%s: about %v watch events per acquire with %d waiters", sub.name, sub.watches, n)
		}
		assert.Less(t, f[20].TotalRequests, 1.5*f[5].TotalRequests, "%s: requests per acquire stay flat", sub.name)
		assert.Greater(t, ex[20].WatchEvents, 2*f[20].WatchEvents, "with 20 waiters the naive lock costs several times %s", sub.name)
	}
}
