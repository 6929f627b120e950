package semaphoremutex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/cohort"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/report"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"go.uber.org/zap"
)

// Curator's InterProcessSemaphoreV2 layout: the internal mutex's nodes in
// locks/ ("_c_<uuid>-lock-<seq>"), the leases' in leases/.
const (
	locksDir  = "locks"
	leasesDir = "leases"
	// soleLeaseTag tags one-lease semaphores' internal lock nodes: a
	// handover from one tells the next contender that no lease node exists.
	soleLeaseTag = "sole-lease"
	// holdsRecipe labels every lease's hold and loss and a Mutex's local
	// handoffs; a Mutex's waits are "semaphoremutex".
	holdsRecipe = "semaphore"
)

var (
	lockSchema  = locknode.ProtectedSchema{Name: "lock"}
	leaseSchema = locknode.ProtectedSchema{Name: "lease"}
)

// Semaphore is a counting semaphore: at most N holders at a time among
// every process on the path, Curator's InterProcessSemaphoreV2 included.
// Each Acquire takes one lease, which any goroutine may return with
// ReturnLease. Holding a lease is a lease on the session, not a promise:
// watch Lease.Lost and fence writes. Safe for concurrent use.
type Semaphore struct {
	path       string
	leasesPath string
	max        int
	sess       *conn.Session
	log        *zap.Logger
	lock       *queue.Queue // the internal mutex: only its holder creates a lease node
	leases     *queue.Queue // for release and Participants only: attempt waits for a lease

	mu   sync.Mutex               // guards held
	held map[*conn.Lease]struct{} // granted by this handle and not yet released
}

// NewSemaphore returns a handle on the semaphore at path with the given
// number of leases, on which every process using the path must agree.
// Nothing is created until the first acquire. It takes lock.WithRevocable;
// bad input, leases < 1 or another option fails with conn.ErrInvalidArgument.
func NewSemaphore(sess *conn.Session, path string, leases int, opts ...lock.Option) (*Semaphore, error) {
	cfg, err := lockopt.Configure("semaphoremutex.NewSemaphore", sess, path, lockopt.Revocable, opts)
	if err != nil {
		return nil, err
	}
	return newSemaphore(sess, path, leases, cfg)
}

// newSemaphore is NewSemaphore after Configure.
func newSemaphore(sess *conn.Session, path string, leases int, cfg lockopt.Config) (*Semaphore, error) {
	if leases < 1 {
		return nil, fmt.Errorf("semaphoremutex: new semaphore %s: %d leases, at least 1: %w", path, leases, conn.ErrInvalidArgument)
	}
	tag := ""
	if leases == 1 {
		tag = soleLeaseTag
	}
	// No Recipe: the lock is no holder's work; its wait is the semaphore's.
	lock, err1 := queue.New(sess, zkpath.Join(path, locksDir), queue.Config{Schema: lockSchema, Predicate: queue.First, Tag: tag},
		queue.Options{Revocable: cfg.Revocable, LocalHandoff: cfg.Handoff != nil})
	leasesPath := zkpath.Join(path, leasesDir)
	// The lease queue grants nothing: First's order without its handover
	// mark, which no release of a lease node may leave.
	lq, err2 := queue.New(sess, leasesPath, queue.Config{Schema: leaseSchema, Predicate: queue.Predicate{Decide: queue.First.Decide}}, queue.Options{Revocable: cfg.Revocable, LocalHandoff: cfg.Handoff != nil})
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("semaphoremutex: %w", err)
	}
	return &Semaphore{
		path:       path,
		leasesPath: leasesPath,
		max:        leases,
		sess:       sess,
		log:        connlink.Of(sess).Logger().With(zap.String("semaphore", path)),
		lock:       lock,
		leases:     lq,
		held:       make(map[*conn.Lease]struct{}),
	}, nil
}

// Acquire blocks until the caller holds one lease or ctx ends. The lease's
// Path is its node (with one lease, maybe the internal lock node). On error
// nothing is held or left behind.
func (s *Semaphore) Acquire(ctx context.Context) (*conn.Lease, error) {
	l, _, err := s.metered(ctx, true)
	return l, err
}

// TryAcquire makes one attempt and does not wait: (nil, false, nil) when
// every lease is taken or, as in Curator, another contender holds the
// internal lock.
func (s *Semaphore) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	return s.metered(ctx, false)
}

// metered is acquire reported as one wait to the session's Lock hook.
func (s *Semaphore) metered(ctx context.Context, wait bool) (*conn.Lease, bool, error) {
	if _, err := locknode.Label(ctx); err != nil { // asks for nothing: no wait
		return nil, false, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	done := report.Meter(s.sess, "semaphore", s.path)
	l, err := s.acquire(ctx, wait)
	done(l != nil, err)
	if err != nil {
		return nil, false, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	return l, l != nil, nil
}

// ReturnLease returns a lease this handle granted, from any goroutine:
// lock.ErrNotHeld when it is nil, not this handle's or already returned;
// lock.ErrReleasePending counts as returned; any other error leaves it held.
func (s *Semaphore) ReturnLease(ctx context.Context, lease *conn.Lease) error {
	if err := s.returnLease(ctx, lease); err != nil {
		return fmt.Errorf("semaphoremutex: release %s: %w", s.path, err)
	}
	return nil
}

// returnLease is ReturnLease, its error not naming the semaphore.
func (s *Semaphore) returnLease(ctx context.Context, lease *conn.Lease) error {
	if lease == nil {
		return fmt.Errorf("nil lease: %w", lock.ErrNotHeld)
	}
	s.mu.Lock()
	_, ok := s.held[lease]
	delete(s.held, lease)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("lease not granted by this handle, or already released: %w", lock.ErrNotHeld)
	}
	release := s.leases.Withdraw // a lease node: a plain delete
	if s.max == 1 && !strings.HasPrefix(lease.Path(), s.leasesPath+"/") {
		release = s.lock.Release // the lease is the internal lock node: hand it over
	}
	err := release(ctx, lease)
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		s.mu.Lock()
		s.held[lease] = struct{}{}
		s.mu.Unlock()
	}
	return err
}

// acquire takes the internal lock, then a lease under it, and releases the
// internal lock; with wait false, neither if either is taken.
func (s *Semaphore) acquire(ctx context.Context, wait bool) (*conn.Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, bg.CtxErr(ctx)
		}
		g, err := s.lock.AcquireGrant(ctx, wait)
		if err != nil {
			return nil, err
		}
		lk := g.Lease
		if lk == nil {
			return nil, nil // TryAcquire: the internal lock is taken
		}
		a := &attempt{s: s, ep: lk.Epoch(), lk: lk, id: attemptID(lk),
			free: s.max == 1 && g.HandedOver && g.From.Tag == soleLeaseTag}
		l, err := a.run(ctx, wait)
		switch {
		case errors.Is(err, errRestart):
			s.log.Debug("starting over", logfield.Session("session", a.ep.SessionID()))
			continue
		case err != nil:
			return nil, err
		case l != nil:
			// Maybe the internal lock's node: its hold is the semaphore's.
			connlink.Of(l).Label(holdsRecipe, s.path)
			s.mu.Lock()
			s.held[l] = struct{}{}
			s.mu.Unlock()
		}
		return l, nil
	}
}

// attemptID is the internal lock node's unique id, which our lease node
// carries too, so that Participants can pair them.
func attemptID(lk *conn.Lease) string {
	if c, ok := lockSchema.Parse(zkpath.Base(lk.Path())); ok && c.ID != "" {
		return c.ID
	}
	return locknode.NewID()
}

// Participants lists the lease holders, oldest first (Holding; with one
// lease maybe an internal lock node kept as the lease), then the contenders
// queued on the internal lock in the order they will be served. A
// snapshot: nodes that leave while it is taken are left out.
func (s *Semaphore) Participants(ctx context.Context) ([]lock.Participant, error) {
	ps, err := s.leases.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: participants of %s: %w", s.path, err)
	}
	waiting, err := s.lock.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: participants of %s: %w", s.path, err)
	}
	if len(ps) > s.max {
		ps = ps[:s.max] // the rest is the contender checking under the internal lock
	}
	locks := zkpath.Join(s.path, locksDir)
	sole := len(ps) == 0 && s.max == 1 && len(waiting) > 0 && waiting[0].Tag == soleLeaseTag
	out, ids := make([]lock.Participant, 0, len(ps)+len(waiting)), map[string]bool{}
	for _, p := range ps {
		out, ids[p.ID] = append(out, p.Public(s.leasesPath, true)), true
	}
	for i, w := range waiting {
		if !ids[w.ID] { // our lease node carries our lock node's id
			out = append(out, w.Public(locks, sole && i == 0))
		}
	}
	return out, nil
}

// Mutex is the semaphore with one lease, shared with Curator's
// InterProcessSemaphoreMutex on the same path. It is owned by the handle,
// like sync.Mutex (mutex.InterProcessMutex is the opposite): not reentrant,
// and any goroutine may Release it. A lost lease counts as held until
// Release. Safe for concurrent use.
type Mutex struct {
	lockLink // the session, for multilock

	sem *Semaphore
	c   cohort.Contender // through a cohort with WithLocalHandoff, else sem's

	gate chan struct{} // holds a token while the handle holds the mutex or acquires it

	mu    sync.Mutex  // guards lease
	lease *conn.Lease // non-nil while held
}

// lockLink is embedded unexported: it adds nothing to the mutex's API.
type lockLink = connlink.Link[*conn.Session]

// New returns a handle on the mutex at path; nothing is created until the
// first acquire. It takes lock.WithRevocable and lock.WithLocalHandoff; bad
// input or another option fails with conn.ErrInvalidArgument.
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
		Acquire: func(ctx context.Context) (*conn.Lease, error) { return s.acquire(ctx, true) },
		TryAcquire: func(ctx context.Context) (*conn.Lease, bool, error) {
			l, err := s.acquire(ctx, false)
			return l, l != nil, err
		},
		Release: s.returnLease, // Mutex.Release names the mutex
		Holds:   holdsRecipe,
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
// held or left behind.
func (m *Mutex) Acquire(ctx context.Context) (*conn.Lease, error) {
	l, _, err := m.acquire(ctx, true)
	return l, err
}

// TryAcquire makes one attempt and does not wait: (nil, false, nil) when
// the handle or another contender holds or is taking the mutex.
func (m *Mutex) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	return m.acquire(ctx, false)
}

func (m *Mutex) acquire(ctx context.Context, wait bool) (l *conn.Lease, ok bool, err error) {
	defer func() {
		if err != nil { // the Contender's remote acquire does not name the mutex
			err = fmt.Errorf("semaphoremutex: acquire %s: %w", m.Path(), err)
		}
	}()
	if _, err := locknode.Label(ctx); err != nil { // before the gate and handoff
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, bg.CtxErr(ctx)
	}
	done := report.Meter(m.sem.sess, "semaphoremutex", m.Path()) // the wait for this handle's hold too
	defer func() { done(ok, err) }()
	select {
	case m.gate <- struct{}{}:
	default:
		if !wait {
			return nil, false, nil
		}
		select {
		case m.gate <- struct{}{}:
		case <-ctx.Done():
			return nil, false, fmt.Errorf("waiting for this handle's release: %w", bg.CtxErr(ctx))
		case <-m.sem.sess.Done():
			return nil, false, conn.ErrClosed
		}
	}
	if wait {
		l, err = m.c.Unmetered().Acquire(ctx)
		ok = l != nil
	} else {
		l, ok, err = m.c.Unmetered().TryAcquire(ctx)
	}
	if err != nil || !ok {
		<-m.gate
		return nil, false, err
	}
	m.mu.Lock()
	m.lease = l
	m.mu.Unlock()
	return l, true, nil
}

// Release releases the mutex, from any goroutine: lock.ErrNotHeld when the
// handle does not hold it (or still acquires it); lock.ErrReleasePending
// counts as released; any other error leaves it held.
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
	} else {
		<-m.gate
	}
	if err != nil {
		return fmt.Errorf("semaphoremutex: release %s: %w", m.Path(), err)
	}
	return nil
}

// Participants lists the holder, if any, then the waiters in the order
// they will be served (see Semaphore.Participants).
func (m *Mutex) Participants(ctx context.Context) ([]lock.Participant, error) {
	return m.sem.Participants(ctx)
}
