package mutex_test

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
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// One ZooKeeper for the package's tests, started on first use; each test
// works under its own path. Tests that hurt a server start their own.
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

var paths atomic.Int64

// lockPath is a path unique to the call (tests may run with -count=N).
func lockPath(t testing.TB, c *zktest.Cluster) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("%s/%s-%d/lock", c.Root(), name, paths.Add(1))
}

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

func epoch(t testing.TB, s *conn.Session) *conn.Epoch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := s.Epoch(ctx)
	require.NoError(t, err)
	return ep
}

func newMutex(t testing.TB, s *conn.Session, path string, opts ...mutex.Option) *mutex.InterProcessMutex {
	t.Helper()
	m, err := mutex.New(s, path, opts...)
	require.NoError(t, err)
	return m
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

// requests is the number of requests s has sent so far.
func requests(s *conn.Session) int64 { return s.Stats().TotalRequests() }

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// getWs is the number of getW requests s has sent.
func getWs(s *conn.Session) int64 { return s.Stats().Requests[conn.OpGetW] }

// watching waits until session s has sent a getW since it had sent before
// of them: its waiter is parked on a watch.
func watching(t testing.TB, s *conn.Session, before int64) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool { return getWs(s) > before }, "waiter watching")
}
