package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// closedSoon reports whether watch channel w is closed (its one event
// taken) within a second.
func closedSoon(w <-chan zk.Event) bool {
	for {
		select {
		case _, ok := <-w:
			if !ok {
				return true
			}
		case <-time.After(time.Second):
			return false
		}
	}
}

// Observe's watch on a missing election path is cleared when it ends, even
// when the path's parents are missing too: the transaction creates the
// missing levels and deletes them again, and leaves nothing.
func TestUnwatchMissingPath(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	base := testzk.Path(t, c, "base")
	path := base + "/a/b/election"
	e, err := New(s, path, "observer")
	require.NoError(t, err)
	ep := testzk.Epoch(t, s)
	ctx := testzk.Ctx(t, 30*time.Second)
	ok, _, w, err := ep.ExistsW(ctx, path)
	require.NoError(t, err)
	require.False(t, ok)
	e.unwatch(ctx, ep, w, false)
	assert.True(t, closedSoon(w), "the watch fired")
	ok, _, err = ep.Exists(ctx, base)
	require.NoError(t, err)
	assert.False(t, ok, "nothing left behind")
}

// A data watch left on an election path that appeared between listing
// and watching is made to fire.
func TestFireExistingPath(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "election")
	e, err := New(s, path, "observer")
	require.NoError(t, err)
	ep := testzk.Epoch(t, s)
	ctx := testzk.Ctx(t, 30*time.Second)
	require.NoError(t, ep.CreateParents(ctx, path+"/x"))
	ok, st, w, err := ep.ExistsW(ctx, path)
	require.NoError(t, err)
	require.True(t, ok)
	e.fire(ctx, ep, st.Version, w)
	assert.True(t, closedSoon(w), "the watch fired")
}
