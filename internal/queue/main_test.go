package queue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// One ZooKeeper for the package's tests (testzk.Shared), started on first
// use; each test works under its own path. Tests that hurt a server start
// their own.
func TestMain(m *testing.M) { testzk.Main(m) }

// The package's tests call the shared helpers by these short names.
var (
	cluster    = testzk.Shared
	connect    = testzk.Connect
	epoch      = testzk.Epoch
	children   = testzk.Children
	eventually = testzk.Eventually
	requests   = testzk.Requests
	ctxTimeout = testzk.Ctx
	watchesSet = testzk.WatchesSet
	watching   = testzk.Watching
)

// lockPath is a path unique to the call (tests may run with -count=N).
func lockPath(t testing.TB, c *zktest.Cluster) string { return testzk.Path(t, c, "lock") }

func mutexQueue(t testing.TB, s *conn.Session, path string) *Queue {
	t.Helper()
	q, err := New(s, path, Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First}, Options{})
	require.NoError(t, err)
	return q
}
