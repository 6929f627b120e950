package mutex

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/cohort"
)

// WithLocalHandoff makes the goroutines that acquire the mutex through one
// session (any handle on the same path and bound) share one ZooKeeper
// node: they queue in the process, first come first served, and the lock
// passes between them without a request, for at most maxPasses local
// handoffs per node and no later than budget after the node was granted
// (0: no time budget). Then the release deletes the node: a contender of
// another process waits for at most maxPasses+1 holds of this process.
// Each grant is a lease of its own; its Fence grows with every grant, but
// Fence.Zxid alone does not. The node is handed on only where a remote
// grant could be made (epoch live, connection not suspended, no deletion
// or revoke request seen). Default: off. maxPasses below 1 or a negative
// budget make New fail with conn.ErrInvalidOption. See docs/design.md,
// "In-process handoff (lock cohorting)".
func WithLocalHandoff(maxPasses int, budget time.Duration) Option {
	return func(c *config) error {
		c.handoff = &cohort.Bound{MaxPasses: maxPasses, Budget: budget}
		return nil
	}
}
