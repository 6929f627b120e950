package semaphoremutex

import "github.com/zkrecipes/zkrecipes/internal/cohort"

// Option configures New and NewSemaphore. Each option documents its
// default and what an invalid value does; a nil Option makes either fail
// with an error matching conn.ErrInvalidOption. The form, func(*config) error, is
// every package's of this module.
type Option func(*config) error

type config struct {
	revocable bool
	handoff   *cohort.Bound // nil: no local handoff (Mutex only)
}

// WithRevocable makes the internal lock and lease nodes this handle
// creates revocable instead of sealed (default: sealed), as
// mutex.WithRevocable does for the mutex: Revoke, or Curator's Revoker,
// may then ask a holder to let go (its Lease.Revoked closes); the lease
// stays held until it is returned. See docs/design.md, "The
// sequential-node queue".
func WithRevocable() Option {
	return func(c *config) error { c.revocable = true; return nil }
}
