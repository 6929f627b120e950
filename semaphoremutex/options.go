package semaphoremutex

// Option configures New and NewSemaphore. A nil Option is invalid: the
// constructor fails with an error matching conn.ErrInvalidOption.
type Option func(*config)

type config struct {
	relist bool
}

// WithRelist(true) makes the contenders queued on the internal lock list
// its children again after every notification, as Curator's
// InterProcessMutex does, instead of deciding from their first listing
// (default false). The grants are the same; it costs one getChildren per
// handoff of the internal lock. It exists to measure the difference.
func WithRelist(v bool) Option {
	return func(c *config) { c.relist = v }
}
