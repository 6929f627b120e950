package cohort

import (
	"context"
	"strings"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/report"
)

// Contender is how a recipe handle gets its grants: through its cohort
// (with a Bound) or straight from its remote lock. The zero value is not
// usable; safe for concurrent use.
type Contender struct {
	co     *Handle // nil without local handoff
	remote Remote
	sess   *conn.Session
	recipe string // kind up to its first "/", for the Lock hook
	path   string
}

// NewContender returns the contender of a recipe handle on sess, through
// the cohort of Key{kind, path, *bound} when bound is not nil.
func NewContender(sess *conn.Session, kind, path string, bound *Bound, remote Remote) (Contender, error) {
	c := Contender{remote: remote, sess: sess, recipe: recipeOf(kind), path: path}
	if bound == nil {
		return c, nil
	}
	h, err := New(sess, Key{Kind: kind, Path: path, Bound: *bound}, remote)
	if err != nil {
		return Contender{}, err
	}
	c.co = h
	return c, nil
}

// recipeOf is the recipe in a cohort kind ("mutex/revocable": "mutex").
func recipeOf(kind string) string {
	name, _, _ := strings.Cut(kind, "/")
	return name
}

// Acquire returns a grant, reporting the whole wait, a local one included,
// once to the session's Lock hook.
func (c Contender) Acquire(ctx context.Context) (*conn.Lease, error) {
	done := report.Meter(c.sess, c.recipe, c.path)
	var (
		l   *conn.Lease
		err error
	)
	if c.co != nil {
		l, err = c.co.Acquire(ctx)
	} else {
		l, err = c.remote.Acquire(ctx)
	}
	done(l != nil, err)
	return l, err
}

// TryAcquire returns a grant if one is free now, reporting as Acquire.
func (c Contender) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	done := report.Meter(c.sess, c.recipe, c.path)
	var (
		l   *conn.Lease
		ok  bool
		err error
	)
	if c.co != nil {
		l, ok, err = c.co.TryAcquire(ctx)
	} else {
		l, ok, err = c.remote.TryAcquire(ctx)
	}
	done(ok, err)
	return l, ok, err
}

// Release ends grant l; a lease that is not the cohort's current grant
// fails with ErrNotHolder.
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
