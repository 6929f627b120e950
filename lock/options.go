package lock

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/lockopt"
)

// Option configures a recipe's New. Every recipe takes the options that
// apply to it and refuses any other, as it refuses a nil Option, with an
// error matching conn.ErrInvalidArgument that names the option and the
// recipe.
type Option func(*lockopt.Config) error

// WithRevocable makes the nodes the handle creates revocable instead of
// sealed (the default): Revoke, or Curator's Revoker, may then ask the
// holder to let go (its Lease.Revoked closes); the lock stays held until it
// is released. Taken by mutex.New, rwlock.New, semaphoremutex.New and
// NewSemaphore. See docs/design.md, "Revocation, Curator style".
func WithRevocable() Option {
	return lockopt.Give(lockopt.Revocable)
}

// WithLocalHandoff makes the goroutines that acquire the lock through one
// session share one node, passed between them without a request at most
// maxPasses times and until budget (0: none) has passed since its grant;
// another process's contender waits for at most maxPasses+1 of these holds.
// Taken by mutex.New and semaphoremutex.New; maxPasses below 1 or a
// negative budget fail. See docs/design.md, "In-process handoff".
func WithLocalHandoff(maxPasses int, budget time.Duration) Option {
	return func(c *lockopt.Config) error {
		c.Given |= lockopt.LocalHandoff
		c.Handoff = &lockopt.Bound{MaxPasses: maxPasses, Budget: budget}
		return nil
	}
}
