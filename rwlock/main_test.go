package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// One ZooKeeper for the package's tests (testzk.Shared), started on first
// use; each test works under its own path. The contract suite restarts its
// server, so no test runs in parallel.
func TestMain(m *testing.M) { testzk.Main(m) }

func newRW(t testing.TB, s *conn.Session, path string, opts ...lock.Option) *rwlock.RWLock {
	t.Helper()
	rw, err := rwlock.New(s, path, opts...)
	require.NoError(t, err)
	return rw
}

// settled makes sure session s has received every watch event caused by
// the changes the server applied before now: it syncs and then reads, and
// a ZooKeeper server sends a session's notifications in order with its
// answers, so any event caused by an earlier change reaches (and is
// counted by) the client before this read's answer.
func settled(t testing.TB, s *conn.Session, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep := testzk.Epoch(t, s)
	require.NoError(t, connlink.Of(ep).Sync(ctx, path))
	_, _, err := s.Exists(ctx, path)
	require.NoError(t, err)
}

// events is the number of watch events s has received.
func events(s *conn.Session) int64 { return connlink.Of(s).Stats().WatchEvents }

// result is what a background acquire came to.
type result struct {
	lease *conn.Lease
	err   error
}

// contender runs acquire and release of one side on its own goroutine, on
// command, so that the goroutine that acquired is the one that releases.
type contender struct {
	lk       *rwlock.Lock
	acquired chan result // one result per acquire
	release  chan struct{}
	released chan error
}

// start begins an Acquire of lk on a new goroutine; the goroutine releases
// when r.release is closed (or gives up when ctx ends).
func start(ctx context.Context, lk *rwlock.Lock) *contender {
	c := &contender{lk: lk, acquired: make(chan result, 1), release: make(chan struct{}), released: make(chan error, 1)}
	go func() {
		l, err := lk.Acquire(ctx)
		c.acquired <- result{l, err}
		if err != nil {
			c.released <- err
			return
		}
		select {
		case <-c.release:
		case <-ctx.Done():
		}
		c.released <- lk.Release(context.WithoutCancel(ctx))
	}()
	return c
}

// wait returns the acquire's result, failing t after d.
func (c *contender) wait(t testing.TB, d time.Duration, who string) result {
	t.Helper()
	select {
	case r := <-c.acquired:
		require.NoError(t, r.err, "%s: acquire", who)
		return r
	case <-time.After(d):
		t.Fatalf("%s did not acquire within %v", who, d)
		return result{}
	}
}

// holds reports whether the acquire has returned (without waiting); the
// result is put back.
func (c *contender) holds() bool {
	select {
	case r := <-c.acquired:
		c.acquired <- r
		return true
	default:
		return false
	}
}

// done releases and waits for the release's answer.
func (c *contender) done(t testing.TB, who string) {
	t.Helper()
	close(c.release)
	select {
	case err := <-c.released:
		require.NoError(t, err, "%s: release", who)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not release", who)
	}
}
