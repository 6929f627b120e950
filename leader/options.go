package leader

// Option configures New.
type Option func(*config)

type config struct {
	requeue bool
}

// WithRequeue(true) makes Run campaign again after each term instead of
// returning: when the function returns nil, or when its term ended because
// leadership was lost, Run resigns (if it still leads) and queues a new
// node. Run then returns only when its ctx ends or the function returns a
// non-nil error while leadership was still safe. Default false: Run
// returns after one term. This is Curator LeaderSelector's autoRequeue.
func WithRequeue(v bool) Option {
	return func(c *config) { c.requeue = v }
}
