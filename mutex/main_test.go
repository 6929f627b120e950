package mutex_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// One ZooKeeper for the package's tests (testzk.Shared), started on first
// use; each test works under its own path. Tests that hurt a server start
// their own.
func TestMain(m *testing.M) { testzk.Main(m) }

func newMutex(t testing.TB, s *conn.Session, path string, opts ...lock.Option) *mutex.InterProcessMutex {
	t.Helper()
	m, err := mutex.New(s, path, opts...)
	require.NoError(t, err)
	return m
}
