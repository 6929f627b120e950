package mutex

// Option configures New.
type Option func(*config)

type config struct {
	relist bool
}

// WithRelist(true) makes waiters list the lock's children again after every
// notification, as Curator and go-zookeeper's zk.Lock do, instead of
// deciding from their first listing (default false). The grants are the
// same; it costs one getChildren per handoff, whose reply grows with the
// queue. It exists to measure the difference.
func WithRelist(v bool) Option {
	return func(c *config) { c.relist = v }
}
