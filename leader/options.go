package leader

import (
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/lock"
)

// WithRequeue makes Run campaign again after each term instead of
// returning: when the function returns nil, or when its term ended because
// leadership was lost, Run resigns (if it still leads) and queues a new
// node. Run then returns only when its ctx ends, when the function returns
// a non-nil error while leadership was still safe, or when the resign
// after a safe term fails: with Resign's error, the server's refusal (the
// handle then still leads: call Resign) or lock.ErrReleasePending. Default
// (without it): Run returns after one term. This is Curator
// LeaderSelector's autoRequeue. Only leader.New takes it.
func WithRequeue() lock.Option {
	return lockopt.Give(lockopt.Requeue)
}
