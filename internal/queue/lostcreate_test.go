package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestLostCreateAnswerOnMissingLockPath: the lock path does not exist yet
// (first use, or its container was reaped) and the answer to our first
// create, NoNode, is lost with the connection. Looking for our node then
// finds no lock path at all: that means "not created", and the acquire goes
// on to make the path and queue, instead of failing with NoNode (found by
// the fault run in recipes_test).
func TestLostCreateAnswerOnMissingLockPath(t *testing.T) {
	c := cluster(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs())
	path := lockPath(t, c) + "/deeper" // no ancestor below the root exists
	q := mutexQueue(t, s, path)
	ctx := ctxTimeout(t, time.Minute)

	p.CutAfterNextWrite() // the first request of Acquire is the create
	l, err := q.Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{l.Path()[len(path)+1:]}, children(t, s, path), "exactly our node")
	require.NoError(t, q.Release(ctx, l))
	assert.Empty(t, children(t, s, path))
}
