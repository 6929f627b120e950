package multilock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Locker is what a MultiLock is made of: every lock of this module
// (exclusive, mutex, semaphoremutex, rwlock's read and write locks) is one.
type Locker interface {
	// Acquire blocks until held or ctx ends.
	Acquire(ctx context.Context) (*conn.Lease, error)
	Release(ctx context.Context) error
	// Path orders the locks; no two locks of a MultiLock may share one.
	Path() string
}

// RollbackTimeout bounds the release of the locks already taken when an
// Acquire fails. The rollback runs on a fresh context (the caller's may be
// the reason for the failure), so it needs a bound of its own.
const RollbackTimeout = 10 * time.Second

type state int

const (
	idle state = iota
	acquiring
	held
	releasing
)

// MultiLock takes several locks as one, all or nothing.
//
// The locks are always taken in the order of their paths, whatever the
// order given to New, so two MultiLocks over overlapping sets take the
// shared locks in the same order and cannot deadlock each other. One context
// bounds the whole Acquire, not each lock. If a lock cannot be taken, the
// ones already taken are released in reverse order before Acquire returns.
//
// Holding a MultiLock is holding every lease it returned: a lease on each
// lock's session, not a promise. Lost closes when any of them is lost.
//
// A MultiLock is not reentrant: Acquire while it is held fails with
// ErrBusy. Any goroutine may Release it. Safe for concurrent use.
type MultiLock struct {
	locks []Locker // sorted by Path; fixed by New

	mu       sync.Mutex    // guards the fields below
	state    state         // see the constants
	leases   []*conn.Lease // in lock order, while held
	lost     chan struct{} // made on each grant; closed once: by the watcher if started, else by Release
	stop     chan struct{} // made on each grant; closed by Release to end the watcher
	watching bool          // the watcher goroutine was started for this grant
}

// New returns a MultiLock over locks. It fails with ErrNoLocks, ErrNilLock
// or ErrDuplicatePath.
func New(locks ...Locker) (*MultiLock, error) {
	if len(locks) == 0 {
		return nil, ErrNoLocks
	}
	sorted := make([]Locker, len(locks))
	for i, l := range locks {
		if isNil(l) {
			return nil, fmt.Errorf("%w: lock %d of %d", ErrNilLock, i+1, len(locks))
		}
		sorted[i] = l
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Path() < sorted[j].Path() })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Path() == sorted[i-1].Path() {
			return nil, fmt.Errorf("%w: %q", ErrDuplicatePath, sorted[i].Path())
		}
	}
	return &MultiLock{locks: sorted}, nil
}

// isNil catches a nil interface and a typed nil pointer in one.
func isNil(l Locker) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// Paths returns the locks' paths in the order they are taken, which is the
// order of the leases Acquire returns.
func (m *MultiLock) Paths() []string {
	out := make([]string, len(m.locks))
	for i, l := range m.locks {
		out[i] = l.Path()
	}
	return out
}

// Acquire takes every lock, in path order, within ctx: one deadline for
// all of them. It returns the leases in that order (see Paths). If a lock
// cannot be taken (ctx ended, or an error), the locks already taken are
// released in reverse order, on a fresh context bounded by RollbackTimeout,
// and the error says which lock failed (wrapping its error, so
// errors.Is(err, context.DeadlineExceeded) works) joined with any error of
// the rollback.
func (m *MultiLock) Acquire(ctx context.Context) ([]*conn.Lease, error) {
	m.mu.Lock()
	if m.state != idle {
		m.mu.Unlock()
		return nil, ErrBusy
	}
	m.state = acquiring
	m.mu.Unlock()

	leases := make([]*conn.Lease, 0, len(m.locks))
	for i, l := range m.locks {
		lease, err := l.Acquire(ctx)
		if err != nil {
			failed := fmt.Errorf("multilock: acquire %s (lock %d of %d): %w", l.Path(), i+1, len(m.locks), err)
			rerr := m.rollback(ctx, i)
			m.setState(idle)
			return nil, errors.Join(failed, rerr)
		}
		leases = append(leases, lease)
	}
	m.mu.Lock()
	m.state = held
	m.leases = leases
	m.lost = make(chan struct{})
	m.stop = make(chan struct{})
	m.watching = false
	m.mu.Unlock()
	return append([]*conn.Lease(nil), leases...), nil
}

// rollback releases locks[n-1] down to locks[0] on a fresh context and
// joins their errors.
func (m *MultiLock) rollback(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RollbackTimeout)
	defer cancel()
	var errs []error
	for j := n - 1; j >= 0; j-- {
		if err := m.locks[j].Release(rctx); err != nil {
			errs = append(errs, fmt.Errorf("multilock: rollback: release %s: %w", m.locks[j].Path(), err))
		}
	}
	return errors.Join(errs...)
}

// Release releases every lock in reverse path order with ctx, going on past
// a failure, and returns every failure joined (errors.Join), each wrapped
// with its lock's path. Lost is closed. A MultiLock that is not held gives
// ErrNotHeld.
func (m *MultiLock) Release(ctx context.Context) error {
	m.mu.Lock()
	if m.state != held {
		m.mu.Unlock()
		return ErrNotHeld
	}
	m.state = releasing
	m.leases = nil
	if m.watching {
		close(m.stop) // the watcher closes lost
	} else {
		close(m.lost)
	}
	m.mu.Unlock()

	var errs []error
	for j := len(m.locks) - 1; j >= 0; j-- {
		if err := m.locks[j].Release(ctx); err != nil {
			errs = append(errs, fmt.Errorf("multilock: release %s: %w", m.locks[j].Path(), err))
		}
	}
	m.setState(idle)
	return errors.Join(errs...)
}

func (m *MultiLock) setState(s state) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = s
}
