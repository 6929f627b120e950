package semaphoremutex

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/cohort"
)

// Option configures New and NewSemaphore; a nil Option makes either fail
// with an error matching conn.ErrInvalidArgument.
type Option func(*config) error

type config struct {
	revocable bool
	handoff   *cohort.Bound // nil: no local handoff (Mutex only)
}

// WithRevocable makes the internal lock and lease nodes this handle
// creates revocable instead of sealed (default: sealed), as
// mutex.WithRevocable does for the mutex: lock.Revoke, or Curator's
// Revoker, may then ask a holder to let go (its Lease.Revoked closes); the
// lease stays held until it is returned. See docs/design.md,
// "Revocation, Curator style".
func WithRevocable() Option {
	return func(c *config) error { c.revocable = true; return nil }
}

// WithLocalHandoff makes the Mutex handles on one session and path (made
// with the same options) share one lease: handles that acquire while it is
// held wait in the process, first come first served, and it passes to
// them without a ZooKeeper request, at most maxPasses times and until
// budget has passed since it was granted (0: no time budget); then the
// release returns it to ZooKeeper, so a contender of another process waits
// for at most maxPasses+1 holds of this process. Each grant is a lease of
// its own, whose Fence grows (Fence.Zxid alone does not). It is not passed
// on once its epoch ended, while suspended, or once a deletion or revoke
// request was seen. Default: off. maxPasses below 1 or a negative budget,
// or the option given to NewSemaphore, fail with conn.ErrInvalidArgument.
// See docs/design.md, "In-process handoff (lock cohorting)".
func WithLocalHandoff(maxPasses int, budget time.Duration) Option {
	return func(c *config) error {
		c.handoff = &cohort.Bound{MaxPasses: maxPasses, Budget: budget}
		return nil
	}
}
