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

// WithRevocable makes the nodes this handle creates (internal lock nodes
// and lease nodes) revocable instead of sealed (default: sealed). A sealed node can be changed by its own
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
	return func(c *config) error { c.revocable = true; return nil }
}
