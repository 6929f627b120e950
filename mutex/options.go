package mutex

import "github.com/zkrecipes/zkrecipes/internal/cohort"

// Option configures New. Each option documents its default and what an
// invalid value does; a nil Option makes New fail with an error matching
// conn.ErrInvalidOption. The form, func(*config) error, is every package's
// of this module.
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
// waiter behind it may list the children again, and it reads the node
// again after every data change (one request each).
func WithRevocable() Option {
	return func(c *config) error { c.revocable = true; return nil }
}
