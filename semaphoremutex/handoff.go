package semaphoremutex

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/cohort"
)

// WithLocalHandoff makes the Mutex handles on one session and path (made
// with the same options) share one ZooKeeper contender: the first acquire
// takes the lease from ZooKeeper; the handles that acquire meanwhile wait
// in the process, first come first served, and the lease passes from one
// to the next without a ZooKeeper request, for at most maxPasses local
// handoffs on one lease, and no more once budget has passed since it was
// granted (0: no time budget). Then the holder's release returns the lease
// to ZooKeeper, so that the contenders of other processes enter, and the
// next local waiter queues again. A contender of another process therefore
// waits for at most maxPasses+1 holds of this process (or budget plus one
// hold) before its turn.
//
// Every grant is a lease of its own: released, it refuses guarded writes
// (GuardedWrite; not a caller's Multi behind its CheckOp, which checks the
// node, shared by the grants on it); its Lost closes with the lease node's;
// its Fence (not its Token, the same for the grants on one node) grows
// strictly with every grant. A release waits for the guarded writes of its
// grant that are in flight (another goroutine may be writing through the
// handle's lease), so none reaches the server after the next grant exists.
// The Mutex stays owned by its handle. It applies to New only;
// NewSemaphore ignores it.
//
// Once a revoke request has been seen on the node (WithRevocable: a grant's
// Revoked closed, and Revoked was called, which starts the watch), the
// node is not passed on in the process any more: the next release deletes
// it.
//
// Default: off (WithoutLocalHandoff); see docs/design.md. maxPasses below
// 1 or a negative budget make New fail with an error matching
// conn.ErrInvalidOption.
func WithLocalHandoff(maxPasses int, budget time.Duration) Option {
	return func(c *config) error {
		c.handoff = &cohort.Bound{MaxPasses: maxPasses, Budget: budget}
		return nil
	}
}

// WithoutLocalHandoff makes every Mutex handle its own ZooKeeper contender
// (the default), as Curator's InterProcessSemaphoreMutex instances are.
func WithoutLocalHandoff() Option {
	return func(c *config) error {
		c.handoff = nil
		return nil
	}
}

// newCohort returns the cohort handle of m for cfg, nil without handoff.
func newCohort(sess *conn.Session, path string, cfg config, m *Mutex) (*cohort.Handle, error) {
	b := cfg.handoff
	if b == nil {
		return nil, nil
	}
	kind := "semaphoremutex"
	if cfg.revocable {
		kind += "/revocable"
	}
	h, err := cohort.New(sess, cohort.Key{Kind: kind, Path: path, Bound: *b}, cohort.Remote{
		Acquire:    m.sem.Acquire,
		TryAcquire: m.sem.TryAcquire,
		Release:    m.sem.Release,
	})
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: %w", err)
	}
	return h, nil
}

// take is one grant for the handle: through the cohort, or the
// semaphore's own.
func (m *Mutex) take(ctx context.Context) (*conn.Lease, error) {
	if m.co != nil {
		l, err := m.co.Acquire(ctx)
		if err != nil {
			return nil, fmt.Errorf("semaphoremutex: acquire %s: %w", m.Path(), err)
		}
		return l, nil
	}
	return m.sem.Acquire(ctx)
}

func (m *Mutex) tryTake(ctx context.Context) (*conn.Lease, bool, error) {
	if m.co != nil {
		l, ok, err := m.co.TryAcquire(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("semaphoremutex: acquire %s: %w", m.Path(), err)
		}
		return l, ok, nil
	}
	return m.sem.TryAcquire(ctx)
}

func (m *Mutex) give(ctx context.Context, l *conn.Lease) error {
	if m.co != nil {
		err := m.co.Release(ctx, l)
		if errors.Is(err, cohort.ErrNotHolder) {
			return fmt.Errorf("%w: %w", ErrNotHeld, err)
		}
		return err
	}
	return m.sem.Release(ctx, l)
}
