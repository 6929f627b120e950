package multilock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Errors returned by this package, compared with errors.Is.
var (
	// ErrBusy: Acquire while held (even partly), acquired or released.
	ErrBusy = errors.New("multilock: already held, or being acquired or released")

	// ErrPartlyReleased: some lock's Release failed and left it held; call
	// Release again, which retries just those (named in the error).
	ErrPartlyReleased = errors.New("multilock: partly released (call Release again)")
)

// identity is a lock's full path and ensemble (see lock.Locker), by which
// MultiLock orders the locks.
type identity struct {
	path     string
	ensemble string
}

func identify(l lock.Locker) identity {
	s, ok := connlink.Find[*conn.Session](l)
	if !ok {
		return identity{path: l.Path()}
	}
	return identity{path: connlink.Of(s).FullPath(l.Path()), ensemble: connlink.Of(s).Ensemble()}
}

func (a identity) String() string {
	if a.ensemble == "" {
		return a.path
	}
	return a.path + " on " + a.ensemble
}

// rollbackTimeout bounds the rollback of a failed Acquire (see rollback).
const rollbackTimeout = 10 * time.Second

type state int

const (
	idle state = iota
	acquiring
	held       // every lock held
	releasing  // a Release is under way
	partlyHeld // a Release left some locks held; Release again retries them
)

// MultiLock takes several locks as one, all or nothing, in the order of
// their full paths. Not reentrant (ErrBusy). Safe for concurrent use.
type MultiLock struct {
	locks []lock.Locker // sorted by identity (full path, then ensemble); fixed by New

	mu       sync.Mutex         // guards the fields below
	state    state              // see the constants
	holding  []lock.Locker      // the locks held, in path order: all of them once acquired, those a Release left held after it; nil otherwise
	leases   []*conn.Lease      // the grant's leases, in lock order, while held (for Lost)
	grant    context.Context    // made on each grant; its Done is Lost (ended when not held)
	end      context.CancelFunc // ends grant: by the first Release, or the watcher
	watching bool               // the watcher goroutine was started for this grant
}

// New returns a MultiLock over locks. No lock, a nil lock, or two on the
// same full path and ensemble fail with conn.ErrInvalidArgument.
func New(locks ...lock.Locker) (*MultiLock, error) {
	if len(locks) == 0 {
		return nil, fmt.Errorf("multilock: new: no locks given: %w", conn.ErrInvalidArgument)
	}
	type entry struct {
		l  lock.Locker
		id identity
	}
	es := make([]entry, len(locks))
	for i, l := range locks {
		if isNil(l) {
			return nil, fmt.Errorf("multilock: new: lock %d of %d is nil: %w", i+1, len(locks), conn.ErrInvalidArgument)
		}
		es[i] = entry{l, identify(l)}
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		return cmp.Or(strings.Compare(a.id.path, b.id.path), strings.Compare(a.id.ensemble, b.id.ensemble))
	})
	sorted := make([]lock.Locker, len(es))
	for i, e := range es {
		if i > 0 && es[i-1].id == e.id {
			return nil, fmt.Errorf("multilock: new: two locks on the same path: %q and %q are both %s: %w", es[i-1].l.Path(), e.l.Path(), e.id, conn.ErrInvalidArgument)
		}
		sorted[i] = e.l
	}
	m := &MultiLock{locks: sorted}
	m.grant, m.end = context.WithCancel(context.Background())
	m.end() // nothing held: Lost is closed
	return m, nil
}

// isNil catches a nil interface and a typed nil pointer in one.
func isNil(l lock.Locker) bool {
	if l == nil {
		return true
	}
	switch v := reflect.ValueOf(l); v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// Acquire takes every lock in order within ctx and returns the leases in
// that order. If one cannot be taken, those taken are released in reverse
// order (until 100 ms after ctx ended, 10 s at most).
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
			m.mu.Lock()
			m.state = idle
			m.mu.Unlock()
			return nil, errors.Join(failed, rerr)
		}
		leases = append(leases, lease)
	}
	m.mu.Lock()
	m.state = held
	m.holding = m.locks
	m.leases = leases
	m.grant, m.end = context.WithCancel(context.Background())
	m.watching = false
	m.mu.Unlock()
	return append([]*conn.Lease(nil), leases...), nil
}

// rollback releases locks[n-1] down to locks[0] and joins their errors.
func (m *MultiLock) rollback(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	rctx, cancel := bg.GraceContext(ctx, rollbackTimeout)
	defer cancel()
	var errs []error
	for j := n - 1; j >= 0; j-- {
		if err := m.locks[j].Release(rctx); err != nil {
			errs = append(errs, fmt.Errorf("multilock: rollback: release %s: %w", m.locks[j].Path(), err))
		}
	}
	return errors.Join(errs...)
}

// Release releases the locks held in reverse order, past failures, and
// joins the errors. A lock left held (any error but lock.ErrReleasePending
// or lock.ErrNotHeld) keeps the MultiLock held: ErrPartlyReleased.
func (m *MultiLock) Release(ctx context.Context) error {
	m.mu.Lock()
	switch m.state {
	case held:
		m.end()
	case partlyHeld: // Lost was closed by the first Release
	default:
		m.mu.Unlock()
		return lock.ErrNotHeld
	}
	m.state = releasing
	locks := m.holding
	m.mu.Unlock()

	var (
		errs []error
		kept []lock.Locker // in reverse path order
	)
	for j := len(locks) - 1; j >= 0; j-- {
		err := locks[j].Release(ctx)
		if err == nil {
			continue
		}
		errs = append(errs, fmt.Errorf("multilock: release %s: %w", locks[j].Path(), err))
		if !errors.Is(err, lock.ErrReleasePending) && !errors.Is(err, lock.ErrNotHeld) {
			kept = append(kept, locks[j])
		}
	}
	slices.Reverse(kept)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.leases = nil // Lost is closed from the first Release on
	if len(kept) == 0 {
		m.state = idle
		m.holding = nil
		return errors.Join(errs...)
	}
	m.state = partlyHeld
	m.holding = kept
	paths := make([]string, len(kept))
	for i, l := range kept {
		paths[i] = l.Path()
	}
	partly := fmt.Errorf("%w: %d of %d locks still held: %s", ErrPartlyReleased, len(kept), len(m.locks), strings.Join(paths, ", "))
	return errors.Join(append([]error{partly}, errs...)...)
}

// Lost returns a channel closed when any lease of the current grant is
// lost or the MultiLock is released; already closed when not held.
func (m *MultiLock) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == held && !m.watching {
		m.watching = true
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.grant.Done())}}
		for _, l := range m.leases {
			if l != nil {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.Lost())})
			}
		}
		go func(end context.CancelFunc) { // until any is closed: the grant ends
			reflect.Select(cases)
			end()
		}(m.end)
	}
	return m.grant.Done()
}
