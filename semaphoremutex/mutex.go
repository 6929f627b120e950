package semaphoremutex

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/cohort"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Mutex is the semaphore with one lease, shared with Curator's
// InterProcessSemaphoreMutex on the same path. It is owned by the handle,
// like sync.Mutex: not reentrant (a further Acquire waits for the Release),
// and any goroutine may Release it. Holding it is a lease on the session,
// not a promise: watch Lease.Lost and fence writes (Lease.Fence,
// Lease.GuardedWrite). A lost lease counts as held until Release.
// Safe for concurrent use.
type Mutex struct {
	lockLink // the session, for multilock

	sem *Semaphore
	c   cohort.Contender // through a cohort with WithLocalHandoff, else sem's

	// gate holds one token while the handle holds the mutex or acquires
	// it: put in by (Try)Acquire, taken out by Release or a failed
	// Acquire. Never closed.
	gate chan struct{}

	mu    sync.Mutex  // guards lease
	lease *conn.Lease // non-nil while held
}

// lockLink is embedded unexported: it adds nothing to the mutex's API.
type lockLink = connlink.Link[*conn.Session]

// New returns a handle on the mutex at path; nothing is created until the
// first acquire. It takes lock.WithRevocable and lock.WithLocalHandoff;
// bad input or any other option fails with an error matching
// conn.ErrInvalidArgument.
func New(sess *conn.Session, path string, opts ...lock.Option) (*Mutex, error) {
	cfg, err := lockopt.Configure("semaphoremutex.New", sess, path, lockopt.Revocable|lockopt.LocalHandoff, opts)
	if err != nil {
		return nil, err
	}
	s, err := newSemaphore(sess, path, 1, cfg)
	if err != nil {
		return nil, err
	}
	kind := "semaphoremutex"
	if cfg.Revocable {
		kind += "/revocable"
	}
	c, err := cohort.NewContender(sess, kind, path, cfg.Handoff, cohort.Remote{
		// The Contender reports the waits, as semaphoremutex's.
		Acquire:    func(ctx context.Context) (*conn.Lease, error) { return s.acquire(ctx, true) },
		TryAcquire: s.tryAcquire,
		Release:    s.ReturnLease,
	})
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: %w", err)
	}
	return &Mutex{lockLink: connlink.NewLink(sess), sem: s, c: c, gate: make(chan struct{}, 1)}, nil
}

// Path is the mutex's path, the parent of locks/ and leases/.
func (m *Mutex) Path() string { return m.sem.path }

// Acquire blocks until the handle holds the mutex or ctx ends, first
// waiting for the handle's own hold or acquire to end. On error nothing is
// held or left behind; the error wraps ctx's or the session's.
func (m *Mutex) Acquire(ctx context.Context) (*conn.Lease, error) {
	if _, err := locknode.Label(ctx); err != nil { // before the gate and handoff
		return nil, m.acquireErr(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("semaphoremutex: acquire %s: %w", m.Path(), bg.CtxErr(ctx))
	}
	select {
	case m.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("semaphoremutex: acquire %s: waiting for this handle's release: %w", m.Path(), bg.CtxErr(ctx))
	}
	l, err := m.c.Acquire(ctx)
	if err != nil {
		<-m.gate
		return nil, m.acquireErr(err)
	}
	m.mu.Lock()
	m.lease = l
	m.mu.Unlock()
	return l, nil
}

// TryAcquire makes one attempt and does not wait: (nil, false, nil) when
// the handle or another contender holds or is taking the mutex.
func (m *Mutex) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	if _, err := locknode.Label(ctx); err != nil { // before the gate and handoff
		return nil, false, m.acquireErr(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("semaphoremutex: acquire %s: %w", m.Path(), bg.CtxErr(ctx))
	}
	select {
	case m.gate <- struct{}{}:
	default:
		return nil, false, nil
	}
	l, ok, err := m.c.TryAcquire(ctx)
	if err != nil || !ok {
		<-m.gate
		return nil, false, m.acquireErr(err)
	}
	m.mu.Lock()
	m.lease = l
	m.mu.Unlock()
	return l, true, nil
}

// Release releases the mutex, from any goroutine. lock.ErrNotHeld when the
// handle does not hold it (or is acquiring it); lock.ErrReleasePending when the delete is
// unconfirmed (it counts as released); any other error leaves it held.
func (m *Mutex) Release(ctx context.Context) error {
	m.mu.Lock()
	l := m.lease
	m.lease = nil
	m.mu.Unlock()
	if l == nil {
		return fmt.Errorf("semaphoremutex: release %s: %w", m.Path(), lock.ErrNotHeld)
	}
	err := m.c.Release(ctx, l)
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		m.mu.Lock()
		m.lease = l
		m.mu.Unlock()
		return err
	}
	<-m.gate
	return err
}

// acquireErr names the mutex in an error of its Contender (whose remote
// acquire, the Semaphore's, does not name it); nil stays nil.
func (m *Mutex) acquireErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("semaphoremutex: acquire %s: %w", m.Path(), err)
}
