package mutex

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/petermattis/goid"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/cohort"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/lock"
)

// InterProcessMutex is a fair lock shared by every process on the lock
// path, Curator's InterProcessMutex included, reentrant per goroutine; any
// other goroutine is a separate contender. Safe for concurrent use.
type InterProcessMutex struct {
	lockLink // the session, for multilock

	q *queue.Queue
	c cohort.Contender // through a cohort with WithLocalHandoff, else q's

	mu    sync.Mutex      // guards owned
	owned map[int64]*hold // by goroutine id; an entry exists while held
}

// lockLink is embedded unexported: it adds nothing to the mutex's API.
type lockLink = connlink.Link[*conn.Session]

// hold is one goroutine's grant.
type hold struct {
	lease *conn.Lease
	count int // re-entries; >= 1
}

// New returns a handle on the mutex at path; the first acquire creates the
// path as container nodes. It takes lock.WithRevocable and
// lock.WithLocalHandoff; any other option fails with conn.ErrInvalidArgument.
func New(sess *conn.Session, path string, opts ...lock.Option) (*InterProcessMutex, error) {
	cfg, err := lockopt.Configure("mutex.New", sess, path, lockopt.Revocable|lockopt.LocalHandoff|lockopt.Relist, opts)
	if err != nil {
		return nil, err
	}
	q, err := queue.New(sess, path, queue.Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: queue.First},
		queue.Options{Recipe: "mutex", Revocable: cfg.Revocable, Relist: cfg.Relist, LocalHandoff: cfg.Handoff != nil}) // the Contender reports the waits
	if err != nil {
		return nil, fmt.Errorf("mutex: %w", err)
	}
	kind := "mutex"
	if cfg.Revocable {
		kind += "/revocable"
	}
	if cfg.Relist {
		kind += "/relist"
	}
	c, err := cohort.NewContender(sess, kind, path, cfg.Handoff, cohort.Remote{
		Acquire: q.Acquire, TryAcquire: q.TryAcquire, Release: q.Release,
	})
	if err != nil {
		return nil, fmt.Errorf("mutex: %w", err)
	}
	return &InterProcessMutex{lockLink: connlink.NewLink(sess), q: q, c: c, owned: make(map[int64]*hold)}, nil
}

// Path is the lock path.
func (m *InterProcessMutex) Path() string { return m.q.Path() }

// Acquire blocks until the calling goroutine holds the mutex or ctx ends;
// on error it holds nothing. The holder gets its lease back at once, or
// conn.ErrLeaseLost if it is lost (release, then acquire again).
func (m *InterProcessMutex) Acquire(ctx context.Context) (*conn.Lease, error) {
	l, _, err := m.acquire(ctx, true)
	return l, err
}

// TryAcquire makes one attempt and does not wait: (nil, false, nil) when
// another contender is ahead. Otherwise as Acquire.
func (m *InterProcessMutex) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	return m.acquire(ctx, false)
}

func (m *InterProcessMutex) acquire(ctx context.Context, wait bool) (*conn.Lease, bool, error) {
	if _, err := locknode.Label(ctx); err != nil { // before re-entry and handoff
		return nil, false, fmt.Errorf("mutex: acquire %s: %w", m.Path(), err)
	}
	gid := goid.Get()
	m.mu.Lock()
	if h := m.owned[gid]; h != nil {
		defer m.mu.Unlock()
		if err := h.lease.Err(); err != nil {
			return nil, false, fmt.Errorf("mutex: re-entering %s: %w", m.Path(), err)
		}
		h.count++
		return h.lease, true, nil
	}
	m.mu.Unlock()
	var (
		l   *conn.Lease
		ok  = true
		err error
	)
	if wait {
		l, err = m.c.Acquire(ctx)
	} else {
		l, ok, err = m.c.TryAcquire(ctx)
	}
	if err != nil || !ok {
		return nil, false, wrap("acquire", m.Path(), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owned[gid] = &hold{lease: l, count: 1}
	return l, true, nil
}

// wrap says the operation and the path before err (nil stays nil).
func wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("mutex: %s %s: %w", op, path, err)
}

// Release undoes one Acquire of the calling goroutine; the last one deletes
// the node. lock.ErrNotOwner or lock.ErrNotHeld when the goroutine does not
// hold the mutex; lock.ErrReleasePending when the delete is unconfirmed (it
// counts as released); any other error leaves it held with a count of one.
func (m *InterProcessMutex) Release(ctx context.Context) error {
	gid := goid.Get()
	m.mu.Lock()
	h := m.owned[gid]
	switch {
	case h == nil && len(m.owned) > 0:
		m.mu.Unlock()
		return wrap("release", m.Path(), lock.ErrNotOwner)
	case h == nil:
		m.mu.Unlock()
		return wrap("release", m.Path(), lock.ErrNotHeld)
	case h.count > 1:
		h.count--
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()

	// Only this goroutine touches owned[gid]: no lock while deleting.
	err := m.c.Release(ctx, h.lease)
	if err == nil || errors.Is(err, lock.ErrReleasePending) {
		m.mu.Lock()
		delete(m.owned, gid)
		m.mu.Unlock()
	}
	return wrap("release", m.Path(), err)
}

// Participants lists the contenders in queue order, the holder first. A
// snapshot.
func (m *InterProcessMutex) Participants(ctx context.Context) ([]lock.Participant, error) {
	ps, err := m.q.Participants(ctx)
	if err != nil {
		return nil, wrap("participants of", m.Path(), err)
	}
	out := make([]lock.Participant, len(ps))
	for i, p := range ps {
		out[i] = p.Public(m.Path(), i == 0)
	}
	return out, nil
}

// IsOwnedByCurrentGoroutine reports whether the calling goroutine holds m.
func (m *InterProcessMutex) IsOwnedByCurrentGoroutine() bool {
	gid := goid.Get()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned[gid] != nil
}
