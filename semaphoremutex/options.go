package semaphoremutex

import "github.com/zkrecipes/zkrecipes/internal/cohort"

// Option configures New and NewSemaphore. A nil Option is invalid: the
// constructor fails with an error matching conn.ErrInvalidOption.
type Option func(*config)

type config struct {
	relist    bool
	revocable bool
	handoff   *cohort.Bound // nil: no local handoff (Mutex only)
}

// WithRelist(true) makes the contenders queued on the internal lock list
// its children again after every notification, as Curator's
// InterProcessMutex does, instead of deciding from their first listing
// (default false). The grants are the same; it costs one getChildren per
// handoff of the internal lock. It exists to measure the difference.
func WithRelist(v bool) Option {
	return func(c *config) { c.relist = v }
}

// WithRevocable makes the nodes this handle creates (internal lock nodes and lease nodes) revocable instead of
// sealed (default: sealed). A sealed node can be changed by its own
// session only (its ACL is the session's, conn.WithACL, without WRITE and
// ADMIN, plus the session's own identity with ALL): nobody else can forge
// the mark its release leaves for the next waiter, and a foreign write
// fails with zk.ErrNoAuth. A revocable node carries the session's ACL as
// it is, so that others can ask its holder to release, as Curator's
// Revoker does: they write "__REVOKE__" into it (Revoke), and the holder's
// Lease.Revoked channel closes. The lock is not taken from the holder: the
// next waiter still enters only once the holder releases. The cost: a
// revocable holder releases with a plain delete (no handover mark), so the
// waiter behind it may list the lease nodes again, and it reads the node
// again after every data change (one request each).
func WithRevocable() Option {
	return func(c *config) { c.revocable = true }
}
