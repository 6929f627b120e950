package semaphoremutex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/report"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Node names, as Curator's InterProcessSemaphoreV2 lays them out under the
// semaphore's path.
const (
	locksDir  = "locks"  // the internal mutex: "_c_<uuid>-lock-<seq>"
	leasesDir = "leases" // the leases: "_c_<uuid>-lease-<seq>"
)

var (
	lockSchema  = locknode.ProtectedSchema{Name: "lock"}
	leaseSchema = locknode.ProtectedSchema{Name: "lease"}
)

// soleLeaseTag tags one-lease semaphores' internal lock nodes: a handover
// from one tells the next contender that no lease node exists
// (docs/design.md, "The semaphore with one lease").
const soleLeaseTag = "sole-lease"

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

	// lock is the internal mutex at <path>/locks: only its holder creates
	// a lease node (with one lease, it may keep its lock node as the lease).
	lock *queue.Queue
	// leases is the queue over <path>/leases, for Release and Participants
	// only: attempt waits for a lease.
	leases *queue.Queue

	mu   sync.Mutex               // guards held
	held map[*conn.Lease]struct{} // granted by this handle and not yet released
}

// NewSemaphore returns a handle on the semaphore at path with the given
// number of leases, on which every process using the path must agree
// (nothing checks it, as in Curator). Nothing is created until the first
// acquire. It takes lock.WithRevocable; bad input, leases < 1 or any other
// option fails with an error matching conn.ErrInvalidArgument.
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
	// No Recipe: the lock is no holder's work, its holds and losses are not
	// reported, and its wait is part of the semaphore's.
	lock, err := queue.New(sess, zkpath.Join(path, locksDir), queue.Config{Schema: lockSchema, Predicate: queue.First, Tag: tag},
		queue.Options{Revocable: cfg.Revocable})
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: %w", err)
	}
	leasesPath := zkpath.Join(path, leasesDir)
	// The lease queue grants nothing (acquire counts lease nodes under the
	// internal lock): First's order without its handover mark, so that no
	// release of a lease node ever leaves one.
	lq, err := queue.New(sess, leasesPath, queue.Config{Schema: leaseSchema, Predicate: queue.Predicate{Decide: queue.First.Decide}}, queue.Options{Revocable: cfg.Revocable})
	if err != nil {
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
// nothing is held or left behind; the error wraps ctx's or the session's.
// A lease granted as ctx ends is given up.
func (s *Semaphore) Acquire(ctx context.Context) (*conn.Lease, error) {
	if _, err := locknode.Label(ctx); err != nil { // asks for nothing: no wait
		return nil, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	done := report.Meter(s.sess, "semaphore", s.path)
	l, err := s.acquire(ctx, true)
	done(l != nil, err)
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	return l, nil
}

// TryAcquire makes one attempt and does not wait: (nil, false, nil) when
// every lease is taken or, as in Curator, another contender holds the
// internal lock.
func (s *Semaphore) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	if _, err := locknode.Label(ctx); err != nil { // asks for nothing: no wait
		return nil, false, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	done := report.Meter(s.sess, "semaphore", s.path)
	l, ok, err := s.tryAcquire(ctx)
	done(ok, err)
	if err != nil {
		return nil, false, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	return l, ok, nil
}

// tryAcquire is TryAcquire without its report to the Lock hook.
func (s *Semaphore) tryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	l, err := s.acquire(ctx, false)
	if err != nil {
		return nil, false, err
	}
	return l, l != nil, nil
}

// ReturnLease returns a lease this handle granted, from any goroutine.
// lock.ErrNotHeld when the lease is nil, not this handle's or already
// returned; lock.ErrReleasePending when the delete is unconfirmed (it
// counts as returned); any other error leaves it held.
func (s *Semaphore) ReturnLease(ctx context.Context, lease *conn.Lease) error {
	if lease == nil {
		return fmt.Errorf("semaphoremutex: release %s: nil lease: %w", s.path, lock.ErrNotHeld)
	}
	s.mu.Lock()
	_, ok := s.held[lease]
	delete(s.held, lease)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("semaphoremutex: release %s: not granted by this handle, or already released: %w",
			lease.Path(), lock.ErrNotHeld)
	}
	release := s.leases.Withdraw // a lease node: a plain delete
	if s.max == 1 && !strings.HasPrefix(lease.Path(), s.leasesPath+"/") {
		release = s.lock.Release // the lease is the internal lock node: hand it over
	}
	err := release(ctx, lease)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lock.ErrReleasePending):
		return fmt.Errorf("semaphoremutex: release %s: %w", lease.Path(), err)
	}
	s.mu.Lock()
	s.held[lease] = struct{}{}
	s.mu.Unlock()
	return fmt.Errorf("semaphoremutex: release %s: %w", lease.Path(), err)
}

// acquire takes the internal lock, then a lease under it, and releases the
// internal lock. With wait false it takes neither if either is taken (nil
// lease, nil error). Its callers meter it and wrap its errors.
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
			connlink.Of(l).Label("semaphore", s.path)
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
	return newID()
}
