package rwlock_test

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

func TestNewValidates(t *testing.T) {
	_, err := rwlock.New(nil, "/a")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.EqualError(t, err, "rwlock: new /a: nil session: conn: invalid argument")
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	for _, p := range []string{"", "a", "/a/", "/a//b", "/a/./b"} {
		_, err := rwlock.New(s, p)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, "%q", p)
	}
	_, err = rwlock.New(s, "/zookeeper/x")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "path /zookeeper/x is reserved")
	_, err = rwlock.New(s, "/a", nil)
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "nil option")
	for h, want := range map[string]string{
		"":            "rwlock: new /a: empty host: conn: invalid argument",
		"a/b":         `rwlock: new /a: host "a/b" contains '/': conn: invalid argument`,
		"bad\x01host": `rwlock: new /a: host "bad\x01host" makes a bad node name: path "/a/bad\x01host-W-0000000000" has the character U+0001 at byte 6, which ZooKeeper rejects: conn: invalid argument`,
	} {
		_, err := rwlock.New(s, "/a", rwlock.WithHost(h))
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, "%q", h)
		assert.EqualError(t, err, want, "%q", h)
	}
	rw := newRW(t, s, "/a/b", rwlock.WithHost("web-1.example"))
	assert.Equal(t, "/a/b", rw.ReadLock().Path())
	assert.Equal(t, "/a/b", rw.WriteLock().Path())
	host := func(rw *rwlock.RWLock) string { // the host part of its node's name
		ctx := testzk.Ctx(t, 30*time.Second)
		l, err := rw.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, rw.WriteLock().Release(ctx)) }()
		name := zkpath.Base(l.Path())
		require.Regexp(t, `-W-\d{10}$`, name)
		return name[:len(name)-len("-W-0000000000")]
	}
	assert.Equal(t, "web-1.example", host(newRW(t, s, testzk.Path(t, c, "host"), rwlock.WithHost("web-1.example"))))
	assert.NotEmpty(t, host(newRW(t, s, testzk.Path(t, c, "host"))), "a default host")
}

// TestNodes: the node names and data, for both sides.
func TestNodes(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	rw := newRW(t, s, path, rwlock.WithHost("app-7-W-x")) // dashes and a kind letter: names parse from the right
	ctx := testzk.Ctx(t, 30*time.Second)
	hostname, _ := os.Hostname()

	for _, side := range []struct {
		lk   *rwlock.Lock
		kind string
	}{{rw.ReadLock(), "R"}, {rw.WriteLock(), "W"}} {
		l, err := side.lk.Acquire(ctx)
		require.NoError(t, err)
		names := testzk.Children(t, s, path)
		require.Len(t, names, 1)
		assert.Regexp(t, regexp.MustCompile(`^app-7-W-x-`+side.kind+`-\d{10}$`), names[0])
		assert.Equal(t, path+"/"+names[0], l.Path())
		b, _, err := s.Get(ctx, l.Path())
		require.NoError(t, err)
		var d struct {
			ID   string `json:"id"`
			Host string `json:"host"`
			PID  int    `json:"pid"`
		}
		require.NoError(t, json.Unmarshal(b, &d))
		assert.Len(t, d.ID, 36, "a unique acquire id")
		assert.Equal(t, hostname, d.Host)
		assert.Equal(t, os.Getpid(), d.PID)
		tok, err := l.Fence(ctx)
		require.NoError(t, err)
		assert.Positive(t, tok.Zxid)
		assert.True(t, side.lk.IsOwnedByCurrentGoroutine())
		require.NoError(t, side.lk.Release(ctx))
		assert.Empty(t, testzk.Children(t, s, path))
		assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "a released lease reports itself lost")
		assert.False(t, side.lk.IsOwnedByCurrentGoroutine())
	}
}

// TestReentrant: three acquires of each side, one node, no request, three
// releases; the fourth is an error.
func TestReentrant(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	rw := newRW(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	for _, side := range []struct {
		name string
		lk   *rwlock.Lock
	}{{"read", rw.ReadLock()}, {"write", rw.WriteLock()}} {
		lk := side.lk
		t.Run(side.name, func(t *testing.T) {
			l1, err := lk.Acquire(ctx)
			require.NoError(t, err)
			before := testzk.Requests(s)
			l2, err := lk.Acquire(ctx)
			require.NoError(t, err)
			l3, ok, err := lk.TryAcquire(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Same(t, l1, l2)
			assert.Same(t, l1, l3)
			assert.Equal(t, before, testzk.Requests(s), "re-entry asks nothing of ZooKeeper")
			assert.Len(t, testzk.Children(t, s, path), 1)

			require.NoError(t, lk.Release(ctx))
			require.NoError(t, lk.Release(ctx))
			assert.Len(t, testzk.Children(t, s, path), 1, "still held once")
			assert.True(t, lk.IsOwnedByCurrentGoroutine())
			require.NoError(t, lk.Release(ctx))
			assert.Empty(t, testzk.Children(t, s, path))
			assert.ErrorIs(t, lk.Release(ctx), lock.ErrNotHeld, "released more often than acquired")
			assert.Empty(t, testzk.Children(t, s, path))
		})
	}
}

// TestReleaseByAnotherGoroutine: only the goroutine that holds a side may
// release it; anything else is an error and changes nothing.
func TestReleaseByAnotherGoroutine(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	rw := newRW(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	other := func(f func() error) error {
		errc := make(chan error, 1)
		go func() { errc <- f() }()
		return <-errc
	}
	for _, side := range []struct {
		name string
		lk   *rwlock.Lock
	}{{"read", rw.ReadLock()}, {"write", rw.WriteLock()}} {
		lk := side.lk
		t.Run(side.name, func(t *testing.T) {
			assert.ErrorIs(t, lk.Release(ctx), lock.ErrNotHeld, "never acquired")
			_, err := lk.Acquire(ctx)
			require.NoError(t, err)
			assert.ErrorIs(t, other(func() error { return lk.Release(ctx) }), lock.ErrNotOwner)
			assert.Len(t, testzk.Children(t, s, path), 1, "nothing changed")
			assert.True(t, lk.IsOwnedByCurrentGoroutine())
			owned := make(chan bool, 1)
			go func() { owned <- lk.IsOwnedByCurrentGoroutine() }()
			assert.False(t, <-owned)
			require.NoError(t, lk.Release(ctx))
			assert.Empty(t, testzk.Children(t, s, path))
		})
	}
	// The other side is not held: releasing it is lock.ErrNotHeld, not a release
	// of the side that is.
	_, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, rw.WriteLock().Release(ctx), lock.ErrNotHeld)
	assert.True(t, rw.ReadLock().IsOwnedByCurrentGoroutine())
	require.NoError(t, rw.ReadLock().Release(ctx))
}

// TestUpgradeRefused: asking for the write lock while holding only the
// read lock fails at once, without a request, and changes nothing.
func TestUpgradeRefused(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	rw := newRW(t, s, path)
	ctx := testzk.Ctx(t, 30*time.Second)
	_, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	before := testzk.Requests(s)
	begin := time.Now()
	_, err = rw.WriteLock().Acquire(ctx)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	assert.Contains(t, err.Error(), "rwlock: upgrade")
	_, ok, err := rw.WriteLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	assert.False(t, ok)
	assert.Less(t, time.Since(begin), time.Second)
	assert.Equal(t, before, testzk.Requests(s), "refused without asking ZooKeeper")
	assert.Len(t, testzk.Children(t, s, path), 1)
	assert.False(t, rw.WriteLock().IsOwnedByCurrentGoroutine())

	// Another goroutine of the process is a separate contender: its write
	// acquire is no upgrade, it waits for our read lock.
	gets := testzk.WatchesSet(s)
	cw := start(ctx, rw.WriteLock())
	testzk.Watching(t, s, gets)
	assert.False(t, cw.holds())
	require.NoError(t, rw.ReadLock().Release(ctx))
	cw.wait(t, 10*time.Second, "writer of another goroutine")
	cw.done(t, "writer of another goroutine")
	assert.Empty(t, testzk.Children(t, s, path))
}
