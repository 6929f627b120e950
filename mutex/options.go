package mutex

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/cohort"
)

// Option configures New; a nil Option makes New fail with an error
// matching conn.ErrInvalidArgument.
type Option func(*config) error

type config struct {
	relist    bool
	revocable bool
	handoff   *cohort.Bound // nil: no local handoff
}

// withRelist(true) makes waiters list the lock's children again after every
// notification, as Curator and go-zookeeper's zk.Lock do, instead of
// deciding from their first listing (default false). The grants are the
// same; it costs one getChildren per handoff, whose reply grows with the
// queue. Not exported: it exists only so that the benchmarks can measure
// the difference (export_test.go gives it to them).
func withRelist(v bool) Option {
	return func(c *config) error { c.relist = v; return nil }
}

// WithRevocable makes the nodes this handle creates revocable instead of
// sealed (default: sealed). Anyone may then ask the holder to release, as
// Curator's Revoker does: lock.Revoke writes "__REVOKE__" into its node
// and the holder's Lease.Revoked closes; the lock stays held until the
// holder releases. A sealed node can be written by its own session only
// (others get zk.ErrNoAuth), so nobody can forge its release mark. The
// cost: a revocable holder's release is a plain delete, and its waiter
// reads the node again after every data change. See docs/design.md,
// "Revocation, Curator style".
func WithRevocable() Option {
	return func(c *config) error { c.revocable = true; return nil }
}

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
// budget make New fail with conn.ErrInvalidArgument. See docs/design.md,
// "In-process handoff (lock cohorting)".
func WithLocalHandoff(maxPasses int, budget time.Duration) Option {
	return func(c *config) error {
		c.handoff = &cohort.Bound{MaxPasses: maxPasses, Budget: budget}
		return nil
	}
}
