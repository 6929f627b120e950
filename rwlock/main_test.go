package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// One ZooKeeper for the package's tests, started on first use; each test
// works under its own path. The contract suite restarts its server, so no
// test runs in parallel.
var shared struct {
	once sync.Once
	c    *zktest.Cluster
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "zktest stop:", err)
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func cluster(t testing.TB) *zktest.Cluster {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.c, shared.err = zktest.Start(ctx)
	})
	zktest.RequireOrSkip(t, shared.err)
	return shared.c
}

// lockPath is a path unique to the test (and to each call: -count=N
// reuses the cluster).
func lockPath(t testing.TB, c *zktest.Cluster) string {
	return fmt.Sprintf("%s/%s-%d/lock", c.Root(), strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), pathSeq.Add(1))
}

var pathSeq atomic.Int64

func connect(t testing.TB, servers []string, opts ...conn.Option) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append([]conn.Option{conn.WithSessionTimeout(8 * time.Second)}, opts...)
	s, err := conn.Connect(ctx, servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// connectN opens n sessions at once.
func connectN(t testing.TB, servers []string, n int) []*conn.Session {
	t.Helper()
	out := make([]*conn.Session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = conn.Connect(ctx, servers, conn.WithSessionTimeout(8*time.Second))
		}()
	}
	wg.Wait()
	for _, s := range out {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	require.NoError(t, errors.Join(errs...))
	return out
}

func epoch(t testing.TB, s *conn.Session) *conn.Epoch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := s.Epoch(ctx)
	require.NoError(t, err)
	return ep
}

func newRW(t testing.TB, s *conn.Session, path string, opts ...rwlock.Option) *rwlock.RWLock {
	t.Helper()
	rw, err := rwlock.New(s, path, opts...)
	require.NoError(t, err)
	return rw
}

// children lists the lock path's children ([] if it does not exist).
func children(t testing.TB, s *conn.Session, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, _, err := epoch(t, s).Children(ctx, path)
	if !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}
	return names
}

// eventually waits up to d for cond, polling observable state.
func eventually(t testing.TB, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: "+msg, append([]any{d}, args...)...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// requests is the number of requests s has sent so far.
func requests(s *conn.Session) int64 { return s.Stats().TotalRequests() }

// getWs is the number of getW requests s has sent.
func getWs(s *conn.Session) int64 { return s.Stats().Requests[conn.OpGetW] }

// watching waits until session s has sent a getW since it had sent before
// of them: its waiter is parked on a watch. The short pause after lets the
// answer come back, so that nothing is in flight when a test then ends a
// session or a context (see mutex's tests: conn.Epoch.await has a data
// race when a caller stops waiting mid-request).
func watching(t testing.TB, s *conn.Session, before int64) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool { return getWs(s) > before }, "waiter watching")
	time.Sleep(50 * time.Millisecond)
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
	ep := epoch(t, s)
	require.NoError(t, ep.Sync(ctx, path))
	_, _, err := ep.Exists(ctx, path)
	require.NoError(t, err)
}

// events is the number of watch events s has received.
func events(s *conn.Session) int64 { return s.Stats().WatchEvents }

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
