package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
)

// These tests use small fakes of the Locker interface (not of ZooKeeper) for
// the ordering, rollback and error-joining logic; zk_test.go runs the same
// properties against real ZooKeeper with exclusive locks.

// recorder keeps the order of calls across fakes.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

type fake struct {
	path string
	rec  *recorder

	// Set before use.
	acquireErr   error
	acquireDelay time.Duration // Acquire takes this long, bounded by ctx
	block        bool          // Acquire waits for ctx to end
	releaseErr   error

	mu          sync.Mutex
	held        bool
	releaseCtxE error // ctx.Err() seen by the last Release
}

func (f *fake) Path() string { return f.path }

func (f *fake) Acquire(ctx context.Context) (*conn.Lease, error) {
	f.rec.add("acquire " + f.path)
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.acquireDelay > 0 {
		t := time.NewTimer(f.acquireDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.acquireErr != nil {
		return nil, f.acquireErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = true
	return nil, nil
}

func (f *fake) Release(ctx context.Context) error {
	f.rec.add("release " + f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releaseCtxE = ctx.Err()
	if f.releaseErr != nil {
		return f.releaseErr
	}
	f.held = false
	return nil
}

func (f *fake) isHeld() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

func fakes(rec *recorder, paths ...string) []*fake {
	out := make([]*fake, len(paths))
	for i, p := range paths {
		out[i] = &fake{path: p, rec: rec}
	}
	return out
}

func lockers(fs []*fake) []lock.Locker {
	out := make([]lock.Locker, len(fs))
	for i, f := range fs {
		out[i] = f
	}
	return out
}

var (
	errBoom  = errors.New("boom")
	errFirst = errors.New("first release failed")
	errThird = errors.New("third release failed")
)

func TestNewErrors(t *testing.T) {
	rec := &recorder{}
	var typedNil *fake
	tests := []struct {
		name  string
		locks []lock.Locker
		says  string
	}{
		{"none", nil, "no locks given"},
		{"nil", []lock.Locker{&fake{path: "/a", rec: rec}, nil}, "lock 2 of 2 is nil"},
		{"typed nil", []lock.Locker{typedNil}, "lock 1 of 1 is nil"},
		{"duplicate", []lock.Locker{&fake{path: "/a", rec: rec}, &fake{path: "/b", rec: rec}, &fake{path: "/a", rec: rec}}, "two locks on the same path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := multilock.New(tc.locks...)
			assert.ErrorIs(t, err, conn.ErrInvalidArgument)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), "multilock: new: "+tc.says)
		})
	}
}

func TestOrderByPath(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/locks/c", "/locks/a", "/locks/b")
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)

	leases, err := m.Acquire(context.Background())
	require.NoError(t, err)
	assert.Len(t, leases, 3)
	require.NoError(t, m.Release(context.Background()))
	assert.Equal(t, []string{
		"acquire /locks/a", "acquire /locks/b", "acquire /locks/c",
		"release /locks/c", "release /locks/b", "release /locks/a",
	}, rec.get())
}

func TestFailureRollsBackInReverse(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/a", "/b", "/c", "/d")
	fs[2].acquireErr = errBoom
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)

	leases, err := m.Acquire(context.Background())
	assert.ErrorIs(t, err, errBoom)
	assert.Contains(t, err.Error(), "/c")
	assert.Nil(t, leases)
	assert.Equal(t, []string{"acquire /a", "acquire /b", "acquire /c", "release /b", "release /a"}, rec.get(),
		"the ones taken are released in reverse; the rest are never tried")
	for _, f := range fs {
		assert.False(t, f.isHeld(), "%s", f.path)
	}

	// Nothing is held, so it can be tried again.
	fs[2].acquireErr = nil
	_, err = m.Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, m.Release(context.Background()))
}

func TestRollbackUsesAFreshContext(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/a", "/b")
	fs[1].block = true
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = m.Acquire(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, fs[0].isHeld())
	assert.NoError(t, fs[0].releaseCtxE, "the rollback did not get the caller's dead context")
}

func TestRollbackErrorsAreJoined(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/a", "/b", "/c")
	fs[2].acquireErr = errBoom
	fs[1].releaseErr = errThird
	fs[0].releaseErr = errFirst
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)

	_, err = m.Acquire(context.Background())
	assert.ErrorIs(t, err, errBoom)
	assert.ErrorIs(t, err, errThird)
	assert.ErrorIs(t, err, errFirst, "the rollback went on past a failed release")
	assert.Equal(t, []string{"acquire /a", "acquire /b", "acquire /c", "release /b", "release /a"}, rec.get())
}

func TestOneOverallDeadline(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/a", "/b", "/c")
	for _, f := range fs {
		f.acquireDelay = 80 * time.Millisecond // each fits in the deadline, all three do not
	}
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err = m.Acquire(ctx)
	took := time.Since(begin)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, 400*time.Millisecond, "one deadline for all locks, not one each")
	assert.Equal(t, []string{"acquire /a", "acquire /b", "acquire /c", "release /b", "release /a"}, rec.get())
}

func TestReleaseGoesOnPastFailuresAndJoinsThem(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/a", "/b", "/c")
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)
	_, err = m.Acquire(context.Background())
	require.NoError(t, err)

	fs[2].releaseErr = errThird
	fs[0].releaseErr = errFirst
	err = m.Release(context.Background())
	assert.ErrorIs(t, err, errThird)
	assert.ErrorIs(t, err, errFirst)
	assert.Contains(t, err.Error(), "/c")
	assert.Contains(t, err.Error(), "/a")
	assert.False(t, fs[1].isHeld(), "the middle lock was released despite the failure before it")
	assert.Equal(t, []string{"acquire /a", "acquire /b", "acquire /c", "release /c", "release /b", "release /a"}, rec.get())
}

// A lock whose Release fails (other than "pending") is still held, and so
// is the MultiLock, by the locks left only: Acquire is busy, Lost is
// closed, and each later Release retries just those locks until they go.
func TestPartlyReleasedIsRetried(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/a", "/b", "/c", "/d")
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	lost := m.Lost()

	fs[3].releaseErr = errThird
	fs[2].releaseErr = fmt.Errorf("%w: %w", lock.ErrReleasePending, context.DeadlineExceeded)
	fs[0].releaseErr = errFirst
	err = m.Release(ctx)
	assert.ErrorIs(t, err, multilock.ErrPartlyReleased)
	assert.ErrorIs(t, err, errThird)
	assert.ErrorIs(t, err, errFirst)
	assert.ErrorIs(t, err, lock.ErrReleasePending, "a pending release is reported too")
	assert.Contains(t, err.Error(), "2 of 4 locks still held: /a, /d")
	assert.True(t, fs[0].isHeld())
	assert.False(t, fs[1].isHeld())
	assert.True(t, fs[3].isHeld())
	waitFor(t, func() bool { return isClosed(lost) })
	assert.True(t, isClosed(m.Lost()), "partly held: no longer whole")
	_, err = m.Acquire(ctx)
	assert.ErrorIs(t, err, multilock.ErrBusy, "partly held")

	// /a goes, /d is refused again.
	fs[0].releaseErr = nil
	err = m.Release(ctx)
	assert.ErrorIs(t, err, multilock.ErrPartlyReleased)
	assert.ErrorIs(t, err, errThird)
	assert.NotErrorIs(t, err, errFirst)
	assert.Contains(t, err.Error(), "1 of 4 locks still held: /d")
	assert.False(t, fs[0].isHeld())

	fs[3].releaseErr = nil
	require.NoError(t, m.Release(ctx))
	assert.False(t, fs[3].isHeld())
	assert.Equal(t, []string{
		"acquire /a", "acquire /b", "acquire /c", "acquire /d",
		"release /d", "release /c", "release /b", "release /a",
		"release /d", "release /a",
		"release /d",
	}, rec.get(), "each retry releases only what is left, in reverse order")
	assert.ErrorIs(t, m.Release(ctx), lock.ErrNotHeld)

	// Whole again.
	fs[2].releaseErr = nil
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	assert.False(t, isClosed(m.Lost()))
	require.NoError(t, m.Release(ctx))
}

// Every lock's "release pending" error is lock.ErrReleasePending (the
// engine returns it too) and its "not held" error
// lock.ErrNotHeld, and a MultiLock counts such a lock
// as released: the handle no longer holds it (its node goes in the
// background), or never did, so a retry would have nothing to do.
func TestPendingAndNotHeldCountAsReleased(t *testing.T) {
	tests := []struct {
		pkg            string
		sentinel, root error
	}{
		{"queue", lock.ErrReleasePending, lock.ErrReleasePending},
		{"mutex", lock.ErrReleasePending, lock.ErrReleasePending},
		{"mutex", lock.ErrNotHeld, lock.ErrNotHeld},
	}
	for _, tc := range tests {
		name := tc.pkg + " pending"
		if tc.root == lock.ErrNotHeld {
			name = tc.pkg + " not held"
		}
		t.Run(name, func(t *testing.T) {
			assert.Same(t, tc.root, tc.sentinel, "one error, read the same in every recipe")

			rec := &recorder{}
			fs := fakes(rec, "/a", "/b")
			fs[0].releaseErr = fmt.Errorf("%s: release: %w: %w", tc.pkg, tc.sentinel, context.Canceled)
			m, err := multilock.New(lockers(fs)...)
			require.NoError(t, err)
			_, err = m.Acquire(context.Background())
			require.NoError(t, err)

			err = m.Release(context.Background())
			assert.ErrorIs(t, err, tc.sentinel, "reported all the same")
			assert.ErrorIs(t, err, context.Canceled)
			assert.NotErrorIs(t, err, multilock.ErrPartlyReleased)
			assert.ErrorIs(t, m.Release(context.Background()), lock.ErrNotHeld, "released")
			_, err = m.Acquire(context.Background())
			require.NoError(t, err, "can be taken again")
			fs[0].releaseErr = nil
			require.NoError(t, m.Release(context.Background()))
		})
	}
}

// Not-owner errors are not "not held": the lock stays held by its owner.
func TestNotOwnerIsNotNotHeld(t *testing.T) {
	assert.NotErrorIs(t, lock.ErrNotOwner, lock.ErrNotHeld)
	assert.NotErrorIs(t, lock.ErrNotOwner, lock.ErrNotHeld)
	assert.Same(t, lock.ErrNotOwner, lock.ErrNotOwner)
	assert.Same(t, lock.ErrNotOwner, lock.ErrNotOwner)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitFor polls cond until it holds (observable state), failing after 5s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		<-tick.C
	}
}
