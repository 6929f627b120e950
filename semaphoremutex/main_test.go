package semaphoremutex_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// One ZooKeeper for the package's tests, started on first use; each test
// works under its own path. The contract suite restarts it, so it runs
// alone (no test here is parallel).
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

// semPath is a path unique to the test.
func semPath(t testing.TB, c *zktest.Cluster) string {
	return c.Root() + "/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "/sem"
}

// connectOption changes how connect connects.
type connectOption func(*[]string)

// withServers connects to addrs (a proxy's) instead of the cluster's.
func withServers(addrs []string) connectOption {
	return func(s *[]string) { *s = addrs }
}

func connect(t testing.TB, c *zktest.Cluster, opts ...connectOption) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := c.Servers()
	for _, o := range opts {
		o(&servers)
	}
	s, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(8*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func connectN(t testing.TB, c *zktest.Cluster, n int) []*conn.Session {
	t.Helper()
	return locktest.ConnectN(t, c.Servers(), 8*time.Second, n)
}

func epoch(t testing.TB, s *conn.Session) *conn.Epoch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := s.Epoch(ctx)
	require.NoError(t, err)
	return ep
}

func newMutex(t testing.TB, s *conn.Session, path string, opts ...semaphoremutex.Option) *semaphoremutex.Mutex {
	t.Helper()
	m, err := semaphoremutex.New(s, path, opts...)
	require.NoError(t, err)
	return m
}

func newSemaphore(t testing.TB, s *conn.Session, path string, leases int) *semaphoremutex.Semaphore {
	t.Helper()
	sem, err := semaphoremutex.NewSemaphore(s, path, leases)
	require.NoError(t, err)
	return sem
}

// children lists a node's children ([] if it does not exist).
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

// ephemerals lists the ephemeral nodes under path (path included).
func ephemerals(t testing.TB, s *conn.Session, path string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := locktest.Ephemerals(ctx, s, path)
	require.NoError(t, err)
	return m
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

// getWs is the number of getW requests s has sent.
func getWs(s *conn.Session) int64 { return s.Stats().Requests[conn.OpGetW] }

// watching waits until session s has sent a getW since it had sent before
// of them: its waiter is parked on a watch. A short pause follows, so that
// the request's answer has come back (see mutex's tests: ending a session
// or a context with a request in flight trips a data race inside conn).
func watching(t testing.TB, s *conn.Session, before int64) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool { return getWs(s) > before }, "waiter watching")
	time.Sleep(50 * time.Millisecond)
}

// result is what a background Acquire came to.
type result struct {
	lease *conn.Lease
	err   error
}

func acquireAsync(ctx context.Context, acquire func(context.Context) (*conn.Lease, error)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := acquire(ctx)
		ch <- result{l, err}
	}()
	return ch
}

func await(t testing.TB, ch <-chan result, d time.Duration, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("%s: no answer within %v", what, d)
		return result{}
	}
}
