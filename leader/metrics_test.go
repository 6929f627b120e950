package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// A term of Run reaches the session's Metrics as its start (leading) and
// its end (with its length), the campaign as a granted wait of recipe
// leader, the resign as a hold.
func TestMetricsTerm(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec))
	path := testzk.Path(t, c, "election")
	e := newElection(t, s, path, "a")
	ctx := testzk.Ctx(t, 30*time.Second)
	var during []conn.LeaderMetric
	require.NoError(t, e.Run(ctx, func(context.Context) error {
		during = rec.TakeLeader()
		time.Sleep(10 * time.Millisecond) // a term of measurable length
		return nil
	}))
	assert.Equal(t, []conn.LeaderMetric{{Path: path, Leading: true}}, during)
	after := rec.TakeLeader()
	require.Len(t, after, 1)
	assert.False(t, after[0].Leading)
	assert.Equal(t, path, after[0].Path)
	assert.GreaterOrEqual(t, after[0].Duration, 10*time.Millisecond)
	assert.Equal(t, []conn.LockMetric{
		{Event: conn.LockWait, Recipe: "leader", Path: path, Outcome: conn.OutcomeGranted},
		{Event: conn.LockHold, Recipe: "leader", Path: path},
	}, testzk.LockEvents(rec.Take()))
}
