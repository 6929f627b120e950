package mutex

// LocalWaiters is the number of goroutines waiting in the process for m's
// cohort (0 without local handoff).
func LocalWaiters(m *InterProcessMutex) int {
	return m.c.Waiting()
}

// WithRelist is withRelist, for the benchmarks that compare listing once
// with listing after every notification.
var WithRelist = withRelist
