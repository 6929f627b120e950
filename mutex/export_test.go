package mutex

import (
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/lock"
)

// LocalWaiters is the number of goroutines waiting in the process for m's
// cohort (0 without local handoff).
func LocalWaiters(m *InterProcessMutex) int {
	return m.c.Waiting()
}

// WithRelist makes waiters list the lock's children again after every
// notification, as Curator and go-zookeeper's zk.Lock do, instead of
// deciding from their first listing (default false). The grants are the
// same; it costs one getChildren per handoff, whose reply grows with the
// queue. Only mutex.New takes it, for the benchmarks that measure the
// difference.
func WithRelist() lock.Option {
	return lockopt.Give(lockopt.Relist)
}
