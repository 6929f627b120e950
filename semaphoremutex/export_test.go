package semaphoremutex

// LocalWaiters is the number of handles waiting in the process for m's
// cohort (0 without local handoff).
func LocalWaiters(m *Mutex) int {
	return m.c.Waiting()
}
