package multilock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
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

func lockers(fs []*fake) []multilock.Locker {
	out := make([]multilock.Locker, len(fs))
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
		locks []multilock.Locker
		want  error
	}{
		{"none", nil, multilock.ErrNoLocks},
		{"nil", []multilock.Locker{&fake{path: "/a", rec: rec}, nil}, multilock.ErrNilLock},
		{"typed nil", []multilock.Locker{typedNil}, multilock.ErrNilLock},
		{"duplicate", []multilock.Locker{&fake{path: "/a", rec: rec}, &fake{path: "/b", rec: rec}, &fake{path: "/a", rec: rec}}, multilock.ErrDuplicatePath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := multilock.New(tc.locks...)
			assert.ErrorIs(t, err, tc.want)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), "multilock: ")
		})
	}
}

func TestOrderByPath(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/locks/c", "/locks/a", "/locks/b")
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)
	assert.Equal(t, []string{"/locks/a", "/locks/b", "/locks/c"}, m.Paths())

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

	assert.ErrorIs(t, m.Release(context.Background()), multilock.ErrNotHeld, "released, even if with errors")
}

func TestBusyAndNotHeld(t *testing.T) {
	rec := &recorder{}
	fs := fakes(rec, "/a", "/b")
	m, err := multilock.New(lockers(fs)...)
	require.NoError(t, err)
	assert.ErrorIs(t, m.Release(context.Background()), multilock.ErrNotHeld)

	_, err = m.Acquire(context.Background())
	require.NoError(t, err)
	_, err = m.Acquire(context.Background())
	assert.ErrorIs(t, err, multilock.ErrBusy, "not reentrant")
	require.NoError(t, m.Release(context.Background()))

	// Busy while another call is acquiring.
	fs[1].block = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctx)
		done <- err
	}()
	waitFor(t, func() bool { return len(rec.get()) >= 6 }) // the second round is at /b
	_, err = m.Acquire(context.Background())
	assert.ErrorIs(t, err, multilock.ErrBusy)
	assert.ErrorIs(t, m.Release(context.Background()), multilock.ErrNotHeld, "nothing held while acquiring")
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

func TestLostWithoutLeases(t *testing.T) {
	rec := &recorder{}
	m, err := multilock.New(lockers(fakes(rec, "/a"))...)
	require.NoError(t, err)
	assert.True(t, isClosed(m.Lost()), "nothing held: closed")
	_, err = m.Acquire(context.Background())
	require.NoError(t, err)
	lost := m.Lost()
	assert.False(t, isClosed(lost))
	assert.Equal(t, lost, m.Lost(), "one channel per grant")
	require.NoError(t, m.Release(context.Background()))
	waitFor(t, func() bool { return isClosed(lost) })
	assert.True(t, isClosed(m.Lost()))
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
