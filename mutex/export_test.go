package mutex

// LocalWaiters is the number of goroutines waiting in the process for m's
// cohort (0 without local handoff).
func LocalWaiters(m *InterProcessMutex) int {
	if m.co == nil {
		return 0
	}
	return m.co.Waiting()
}
