package semaphoremutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// One ZooKeeper for the package's tests (testzk.Shared), started on first
// use; each test works under its own path. The contract suite restarts it,
// so it runs alone (no test here is parallel).
func TestMain(m *testing.M) { testzk.Main(m) }

func newMutex(t testing.TB, s *conn.Session, path string, opts ...lock.Option) *semaphoremutex.Mutex {
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

// leaseHolders is the part of sem's Participants that holds a lease.
func leaseHolders(ctx context.Context, sem *semaphoremutex.Semaphore) ([]lock.Participant, error) {
	ps, err := sem.Participants(ctx)
	var out []lock.Participant
	for _, p := range ps {
		if p.Holding {
			out = append(out, p)
		}
	}
	return out, err
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
