package mutex

// LocalWaiters is the number of goroutines waiting in the process for m's
// cohort (0 without local handoff).
func LocalWaiters(m *InterProcessMutex) int {
	return m.c.Waiting()
}
