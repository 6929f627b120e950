package semaphoremutex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/internal/queue"
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
	lockSchema  = queue.ProtectedSchema{Name: "lock"}
	leaseSchema = queue.ProtectedSchema{Name: "lease"}
)

// soleLeaseTag is the queue tag of one-lease semaphores' internal lock
// nodes: a handover from such a node tells the next one-lease contender
// that no lease node exists (docs/design.md, "The semaphore with one
// lease").
const soleLeaseTag = "sole-lease"

// Semaphore is a counting semaphore: at most Leases() holders at a time
// among every process that uses the same path on the same ZooKeeper
// ensemble, Curator's InterProcessSemaphoreV2 included. Each Acquire takes
// one lease, returned with ReturnLease (Curator's returnLease: a handle
// holds several leases, so the lease is named, unlike every lock's
// Release(ctx)); any goroutine may return a lease the handle granted.
//
// Holding a lease is a lease on the ZooKeeper session, not a promise: watch
// Lease.Lost, and use Lease.Fence or Lease.GuardedWrite where a stale holder
// must not write.
//
// Safe for concurrent use.
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
	// only: the wait for a lease is attempt's (acquire.go).
	leases *queue.Queue

	mu   sync.Mutex               // guards held
	held map[*conn.Lease]struct{} // granted by this handle and not yet released
}

// NewSemaphore returns a handle on the semaphore at path with the given
// number of leases. Every process using the path must agree on that number;
// nothing checks it (as in Curator). Nothing is created until the first
// acquire; the path, <path>/locks and <path>/leases are then created as
// container nodes, which ZooKeeper removes when they are empty.
//
// A nil session, leases < 1, a bad path, a nil option or an option other
// than lock.WithRevocable fails with an error matching
// conn.ErrInvalidArgument.
func NewSemaphore(sess *conn.Session, path string, leases int, opts ...lock.Option) (*Semaphore, error) {
	cfg, err := queue.Configure("semaphoremutex.NewSemaphore", sess, path, lockopt.Revocable, opts)
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
	lock, err := queue.New(sess, zkpath.Join(path, locksDir), queue.Config{
		Schema:      lockSchema,
		Internal:    true, // no holder's work: its holds and losses are not reported
		Decide:      queue.First,
		MarkRelease: true,
		Tag:         tag,
		Revocable:   cfg.Revocable,
		Unmetered:   true, // its wait is part of the semaphore's
	})
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: %w", err)
	}
	leasesPath := zkpath.Join(path, leasesDir)
	lq, err := queue.New(sess, leasesPath, queue.Config{Schema: leaseSchema, Decide: queue.First, Revocable: cfg.Revocable})
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

// Leases is the number of leases the handle was made with.
func (s *Semaphore) Leases() int { return s.max }

// Acquire blocks until the caller holds one lease or ctx ends; a deadline
// on ctx is the timeout. The lease is held until ReturnLease or its loss;
// its Path is its node (with one lease, maybe the internal lock node). On
// error nothing is held or left behind, and the error wraps ctx's or the
// session's; a lease free at the moment ctx ended is given up.
func (s *Semaphore) Acquire(ctx context.Context) (*conn.Lease, error) {
	if _, err := queue.Label(ctx); err != nil { // asks for nothing: no wait
		return nil, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	done := queue.Meter(s.sess, "semaphore", s.path)
	l, err := s.acquire(ctx, true)
	done(l != nil, err)
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	return l, nil
}

// TryAcquire makes one attempt and does not wait: it returns (nil, false,
// nil) when every lease is taken, and also, as Curator's acquire with a
// zero timeout does, when another contender holds the internal lock at
// that moment (it is taking or waiting for a lease).
func (s *Semaphore) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	if _, err := queue.Label(ctx); err != nil { // asks for nothing: no wait
		return nil, false, fmt.Errorf("semaphoremutex: acquire %s: %w", s.path, err)
	}
	done := queue.Meter(s.sess, "semaphore", s.path)
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

// ReturnLease returns a lease this handle granted: it deletes the lease's
// node and marks the lease released. lock.ErrNotHeld when the lease is nil,
// not this handle's or already returned; lock.ErrReleasePending when the
// delete is unconfirmed (the lease counts as returned); any other error
// leaves it held. A lost lease is returned without error.
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
	q := s.leases
	if s.max == 1 && !strings.HasPrefix(lease.Path(), s.leasesPath+"/") {
		q = s.lock // the lease is the internal lock node: hand it over
	}
	err := q.Release(ctx, lease)
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

// acquire takes the internal lock, then a lease under it; the internal lock
// is released whatever happened. With wait false it takes neither if
// either is taken (nil lease, nil error). Its callers meter it and name
// the semaphore in its errors.
func (s *Semaphore) acquire(ctx context.Context, wait bool) (*conn.Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, queue.CtxErr(ctx)
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
			// The lease may be the internal lock's node (one lease):
			// its hold is the semaphore's.
			connlink.Of(l).Label("semaphore", s.path)
			s.mu.Lock()
			s.held[l] = struct{}{}
			s.mu.Unlock()
		}
		return l, nil
	}
}

// attemptID is the unique id of the internal lock node, which our lease
// node carries too, so that Participants can tell the two apart for one
// contender. A fresh id if the name cannot be read (it always can).
func attemptID(lk *conn.Lease) string {
	if c, ok := lockSchema.Parse(zkpath.Base(lk.Path())); ok && c.ID != "" {
		return c.ID
	}
	return newID()
}
