package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// A term of Run reaches the session's Leader hook as its start (leading) and
// its end (with its length), the campaign as a granted wait of recipe
// leader, the resign as a hold.
func TestMetricsTerm(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	path := testzk.Path(t, c, "election")
	e := newElection(t, s, path, "a")
	ctx := testzk.Ctx(t, 30*time.Second)
	var during []metrics.Leader
	require.NoError(t, e.Run(ctx, func(context.Context, *conn.Lease) error {
		during = rec.TakeLeader()
		time.Sleep(10 * time.Millisecond) // a term of measurable length
		return nil
	}))
	assert.Equal(t, []metrics.Leader{{Path: path, Leading: true}}, during)
	after := rec.TakeLeader()
	require.Len(t, after, 1)
	assert.False(t, after[0].Leading)
	assert.Equal(t, path, after[0].Path)
	assert.GreaterOrEqual(t, after[0].Duration, 10*time.Millisecond)
	assert.Equal(t, []metrics.Lock{
		{Event: metrics.LockWait, Recipe: "leader", Path: path, Outcome: metrics.OutcomeGranted},
		{Event: metrics.LockHold, Recipe: "leader", Path: path},
	}, testzk.LockEvents(rec.Take()))
}

// A campaign is one wait however many nodes it queues: a participant whose
// node a bystander deleted while it waited is granted that node when the
// leader resigns, finds it gone and queues again (lead), and the session's
// Lock hook sees one granted wait, not one per node.
func TestMetricsCampaignIsOneWait(t *testing.T) {
	c := testzk.Shared(t)
	rec := &testzk.Recorder{}
	path := testzk.Path(t, c, "election")
	sl := testzk.Connect(t, c.Servers())
	sp := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
	sb := testzk.Connect(t, c.Servers())
	ctx := testzk.Ctx(t, 30*time.Second)
	l := newElection(t, sl, path, "L")
	_, err := l.Campaign(ctx)
	require.NoError(t, err)
	p := newElection(t, sp, path, "P")
	before := testzk.WatchesSet(sp)
	got := make(chan error, 1)
	var lease *conn.Lease // P's, once got has its error
	go func() {
		var err error
		lease, err = p.Campaign(ctx)
		got <- err
	}()
	testzk.Watching(t, sp, before)
	ps, err := l.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	require.Equal(t, "P", ps[1].ID)
	require.NoError(t, sb.Delete(ctx, ps[1].Node, -1)) // the bystander
	require.NoError(t, l.Resign(ctx))
	require.NoError(t, <-got)
	require.NotNil(t, lease)
	assert.NotEqual(t, ps[1].Node, lease.Path(), "P leads on a node queued after the deleted one")
	var waits []metrics.Lock
	for _, m := range testzk.LockEvents(rec.Take()) {
		if m.Event == metrics.LockWait {
			waits = append(waits, m)
		}
	}
	assert.Equal(t, []metrics.Lock{{Event: metrics.LockWait, Recipe: "leader", Path: path, Outcome: metrics.OutcomeGranted}}, waits)
	require.NoError(t, p.Resign(ctx))
}
