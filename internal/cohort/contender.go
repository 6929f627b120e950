package cohort

import (
	"context"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Contender is how a recipe handle gets its grants: through the cohort of
// its session and key (the in-process handoff, when the handle was made
// with a Bound), or straight from its remote lock. The recipes' one copy
// of that choice. The zero value is not usable; safe for concurrent use.
type Contender struct {
	co     *Handle // nil without local handoff
	remote Remote
}

// NewContender returns the contender of a recipe handle on sess: through
// the cohort of Key{kind, path, *bound} (New checks bound) when bound is
// not nil, else remote's own acquire and release.
func NewContender(sess *conn.Session, kind, path string, bound *Bound, remote Remote) (Contender, error) {
	if bound == nil {
		return Contender{remote: remote}, nil
	}
	h, err := New(sess, Key{Kind: kind, Path: path, Bound: *bound}, remote)
	if err != nil {
		return Contender{}, err
	}
	return Contender{co: h, remote: remote}, nil
}

// Shared reports whether grants go through a cohort (local handoff).
func (c Contender) Shared() bool { return c.co != nil }

// Acquire returns a grant (Handle.Acquire, or Remote.Acquire).
func (c Contender) Acquire(ctx context.Context) (*conn.Lease, error) {
	if c.co != nil {
		return c.co.Acquire(ctx)
	}
	return c.remote.Acquire(ctx)
}

// TryAcquire returns a grant if one is free now (Handle.TryAcquire, or
// Remote.TryAcquire).
func (c Contender) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	if c.co != nil {
		return c.co.TryAcquire(ctx)
	}
	return c.remote.TryAcquire(ctx)
}

// Release ends grant l (Handle.Release, or Remote.Release). A lease that is
// not the cohort's current grant fails with ErrNotHolder, which matches
// lock.ErrNotHeld.
func (c Contender) Release(ctx context.Context, l *conn.Lease) error {
	if c.co != nil {
		return c.co.Release(ctx, l)
	}
	return c.remote.Release(ctx, l)
}

// Waiting is Handle.Waiting, 0 without local handoff. For tests.
func (c Contender) Waiting() int {
	if c.co == nil {
		return 0
	}
	return c.co.Waiting()
}
