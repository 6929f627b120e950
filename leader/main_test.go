package leader_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
)

// One ZooKeeper for the package's tests (testzk.Shared); each test works
// under its own path. Tests that hurt a server start their own.
func TestMain(m *testing.M) { testzk.Main(m) }

func newElection(t testing.TB, s *conn.Session, path, id string, opts ...lock.Option) *leader.Election {
	t.Helper()
	e, err := leader.New(s, path, id, opts...)
	require.NoError(t, err)
	return e
}
