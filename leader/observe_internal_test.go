package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// Observe's watch on a missing election path is removed from the server
// when it ends (removeWatches), with nothing created.
func TestUnwatchMissingPath(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	base := testzk.Path(t, c, "base")
	path := base + "/a/b/election"
	e, err := New(s, path, "observer")
	require.NoError(t, err)
	ep := testzk.Epoch(t, s)
	ctx := testzk.Ctx(t, 30*time.Second)
	ok, _, w, err := connlink.Of(ep).ExistsW(ctx, path)
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, []string{path}, testzk.DataWatches(t, c, ep.SessionID()))
	e.unwatch(ctx, ep, w)
	assert.Empty(t, testzk.DataWatches(t, c, ep.SessionID()), "no watch left")
	ok, _, err = s.Exists(ctx, base)
	require.NoError(t, err)
	assert.False(t, ok, "nothing created")
}

// A data watch left on an election path that appeared between listing
// and watching is removed, with no write.
func TestUnwatchExistingPath(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "election")
	e, err := New(s, path, "observer")
	require.NoError(t, err)
	ep := testzk.Epoch(t, s)
	ctx := testzk.Ctx(t, 30*time.Second)
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, path+"/x"))
	ok, st, w, err := connlink.Of(ep).ExistsW(ctx, path)
	require.NoError(t, err)
	require.True(t, ok)
	e.unwatch(ctx, ep, w)
	assert.Empty(t, testzk.DataWatches(t, c, ep.SessionID()), "no watch left")
	_, st2, err := s.Get(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, st.Mzxid, st2.Mzxid, "the path was not written")
}
