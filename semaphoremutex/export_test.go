package semaphoremutex

// LocalWaiters is the number of handles waiting in the process for m's
// cohort (0 without local handoff).
func LocalWaiters(m *Mutex) int {
	if m.co == nil {
		return 0
	}
	return m.co.Waiting()
}
