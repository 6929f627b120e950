package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
)

func TestNewValidates(t *testing.T) {
	_, err := mutex.New(nil, "/a")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.EqualError(t, err, "mutex: new /a: nil session: conn: invalid argument")
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	for _, p := range []string{"", "a", "/a/", "/a//b", "/zookeeper/x"} {
		_, err := mutex.New(s, p)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, "%q", p)
	}
	_, err = mutex.New(s, "/a", nil)
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.EqualError(t, err, "mutex: new /a: nil option: conn: invalid argument")
	m := newMutex(t, s, "/a/b")
	assert.Equal(t, "/a/b", m.Path())
}

func TestUncontended(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)

	assert.False(t, m.IsOwnedByCurrentGoroutine())
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.True(t, m.IsOwnedByCurrentGoroutine())
	names := testzk.Children(t, s, path)
	require.Len(t, names, 1)
	assert.Regexp(t, `^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$`, names[0])
	assert.Equal(t, path+"/"+names[0], l.Path())

	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, l.Path(), ps[0].Node)
	assert.True(t, ps[0].Holding, "the first holds the mutex")
	assert.True(t, ps[0].Known)
	assert.NotZero(t, ps[0].PID)
	assert.Contains(t, names[0], ps[0].ID)

	tok, err := l.Fence(ctx)
	require.NoError(t, err)
	assert.Positive(t, tok.Zxid)

	require.NoError(t, m.Release(ctx))
	assert.False(t, m.IsOwnedByCurrentGoroutine())
	assert.Empty(t, testzk.Children(t, s, path))
	select {
	case <-l.Lost():
	default:
		t.Fatal("a released lease reports itself lost")
	}
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost)
}

func TestReentrant(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)

	l1, err := m.Acquire(ctx)
	require.NoError(t, err)
	before := testzk.Requests(s)
	l2, err := m.Acquire(ctx)
	require.NoError(t, err)
	l3, ok, err := m.TryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Same(t, l1, l2)
	assert.Same(t, l1, l3)
	assert.Equal(t, before, testzk.Requests(s), "re-entry asks nothing of ZooKeeper")
	assert.Len(t, testzk.Children(t, s, path), 1)

	require.NoError(t, m.Release(ctx))
	require.NoError(t, m.Release(ctx))
	assert.Len(t, testzk.Children(t, s, path), 1, "still held once")
	assert.True(t, m.IsOwnedByCurrentGoroutine())
	require.NoError(t, m.Release(ctx))
	assert.Empty(t, testzk.Children(t, s, path))
	assert.ErrorIs(t, m.Release(ctx), lock.ErrNotHeld, "released more often than acquired")
}

func TestReleaseByAnotherGoroutine(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)

	assert.ErrorIs(t, m.Release(ctx), lock.ErrNotHeld, "never acquired")
	_, err := m.Acquire(ctx)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { errc <- m.Release(ctx) }()
	assert.ErrorIs(t, <-errc, lock.ErrNotOwner)
	assert.Len(t, testzk.Children(t, s, path), 1, "nothing changed")
	assert.True(t, m.IsOwnedByCurrentGoroutine())
	owned := make(chan bool, 1)
	go func() { owned <- m.IsOwnedByCurrentGoroutine() }()
	assert.False(t, <-owned)
	require.NoError(t, m.Release(ctx))
}

// TestOtherGoroutineWaits: another goroutine of the same process is a
// separate contender with its own node.
func TestOtherGoroutineWaits(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)

	_, err := m.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		_, err := m.Acquire(ctx)
		got <- err
		if err == nil {
			<-release
			got <- m.Release(ctx)
		}
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, s, path)) == 2 }, "second goroutine queued")
	_, ok, err := m.TryAcquire(testzk.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, ok, "the holder re-enters")
	require.NoError(t, m.Release(ctx))
	select {
	case <-got:
		t.Fatal("granted while the first goroutine still holds")
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, m.Release(ctx))
	require.NoError(t, <-got)
	close(release)
	require.NoError(t, <-got)
	assert.Empty(t, testzk.Children(t, s, path))
}
