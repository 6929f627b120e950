package exclusive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// herdHold is each holder's critical section in the herd test: long enough
// for the woken waiters to fail their creates and watch again, as they
// would behind any real work.
const herdHold = 20 * time.Millisecond

// TestHerdEffect measures the naive lock with 5 and 20 waiters draining a
// queue: it stays correct (MeasureHerd checks that), and its per-acquire
// watch events and requests grow with the number of waiters, because every
// release wakes every waiter and every one of them sends a create.
//
// The comparison with the sequential mutex (flat: about one watch event and
// two requests per acquire) is recipes_test/herd_test.go, which measures
// every lock type with the same locktest.MeasureHerd call; add new recipes
// to its herdSubjects.
func TestHerdEffect(t *testing.T) {
	c := zktest.New(t)
	small := locktest.MeasureHerd(t, c, newLock, 5, herdHold)
	large := locktest.MeasureHerd(t, c, newLock, 20, herdHold)
	t.Logf("exclusive, %v", small)
	t.Logf("exclusive, %v", large)

	assert.Greater(t, large.WatchEvents, 2*small.WatchEvents,
		"per-acquire watch events grow with the number of waiters (herd effect)")
	assert.Greater(t, large.TotalRequests, 2*small.TotalRequests,
		"per-acquire requests grow with the number of waiters (herd effect)")
	assert.Greater(t, large.Requests["create"], 2*small.Requests["create"],
		"every waiter sends a create on every release")
}
