package mutex

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/petermattis/goid"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/cohort"
	"github.com/zkrecipes/zkrecipes/internal/lockid"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/nodelabel"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/lock"
)

// InterProcessMutex is a fair lock shared by every process on the lock
// path, Curator's InterProcessMutex included. It is reentrant per
// goroutine (counted locally; release as often); any other goroutine is a
// separate contender. Holding it is a lease on the session, not a promise:
// watch Lease.Lost and fence writes. Safe for concurrent use.
type InterProcessMutex struct {
	lockLink // the session, for multilock

	q *queue.Queue
	c cohort.Contender // through a cohort with WithLocalHandoff, else q's

	mu    sync.Mutex      // guards owned
	owned map[int64]*hold // by goroutine id; an entry exists while held
}

// lockLink is embedded unexported: it adds nothing to the mutex's API.
type lockLink = lockid.Link

// hold is one goroutine's grant.
type hold struct {
	lease *conn.Lease
	count int // re-entries; >= 1
}

// New returns a handle on the mutex at path. Nothing is created until the
// first acquire, which creates the path as container nodes. It takes
// lock.WithRevocable and lock.WithLocalHandoff; any other option fails
// with an error matching conn.ErrInvalidArgument.
func New(sess *conn.Session, path string, opts ...lock.Option) (*InterProcessMutex, error) {
	cfg, err := lockopt.Configure("mutex.New", sess, path, lockopt.Revocable|lockopt.LocalHandoff|lockopt.Relist, opts)
	if err != nil {
		return nil, err
	}
	q, err := queue.New(sess, path, queue.Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: queue.First},
		queue.Options{Recipe: "mutex", Revocable: cfg.Revocable, Relist: cfg.Relist}) // the Contender reports the waits
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
	m := &InterProcessMutex{lockLink: lockid.NewLink(sess), q: q, c: c, owned: make(map[int64]*hold)}
	return m, nil
}

// Path is the lock path.
func (m *InterProcessMutex) Path() string { return m.q.Path() }

// Acquire blocks until the calling goroutine holds the mutex or ctx ends;
// on error it holds nothing, and a grant as ctx ends is given up. The
// holder gets its lease back at once, or conn.ErrLeaseLost if it is lost
// (the count unchanged: release, then acquire again).
func (m *InterProcessMutex) Acquire(ctx context.Context) (*conn.Lease, error) {
	if _, err := nodelabel.From(ctx); err != nil { // before re-entry and handoff
		return nil, fmt.Errorf("mutex: acquire %s: %w", m.Path(), err)
	}
	gid := goid.Get()
	if l, ok, err := m.reenter(gid); ok {
		return l, err
	}
	l, err := m.c.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("mutex: acquire %s: %w", m.Path(), err)
	}
	m.record(gid, l)
	return l, nil
}

// TryAcquire makes one attempt and does not wait: it queues a node, and if
// another contender is ahead of it, deletes it and returns (nil, false,
// nil). Re-entry works as for Acquire.
func (m *InterProcessMutex) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	if _, err := nodelabel.From(ctx); err != nil { // before re-entry and handoff
		return nil, false, fmt.Errorf("mutex: acquire %s: %w", m.Path(), err)
	}
	gid := goid.Get()
	if l, ok, err := m.reenter(gid); ok {
		return l, err == nil, err
	}
	l, ok, err := m.c.TryAcquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("mutex: acquire %s: %w", m.Path(), err)
	}
	if ok {
		m.record(gid, l)
	}
	return l, ok, nil
}

// reenter counts a re-entry if goroutine gid holds the mutex (ok true).
func (m *InterProcessMutex) reenter(gid int64) (l *conn.Lease, ok bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.owned[gid]
	if h == nil {
		return nil, false, nil
	}
	if err := h.lease.Err(); err != nil {
		return nil, true, fmt.Errorf("mutex: re-entering %s: %w", m.Path(), err)
	}
	h.count++
	return h.lease, true, nil
}

func (m *InterProcessMutex) record(gid int64, l *conn.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owned[gid] = &hold{lease: l, count: 1}
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
		return fmt.Errorf("mutex: release %s: %w", m.Path(), lock.ErrNotOwner)
	case h == nil:
		m.mu.Unlock()
		return fmt.Errorf("mutex: release %s: %w", m.Path(), lock.ErrNotHeld)
	case h.count > 1:
		h.count--
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()

	// Only this goroutine touches owned[gid]: no lock while deleting.
	err := m.c.Release(ctx, h.lease)
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		return fmt.Errorf("mutex: release %s: %w", m.Path(), err)
	}
	m.mu.Lock()
	delete(m.owned, gid)
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("mutex: release %s: %w", m.Path(), err)
	}
	return nil
}

// IsOwnedByCurrentGoroutine reports whether the calling goroutine holds
// the mutex through this handle.
func (m *InterProcessMutex) IsOwnedByCurrentGoroutine() bool {
	gid := goid.Get()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned[gid] != nil
}
