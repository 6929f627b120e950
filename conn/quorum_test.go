package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// blackholeMargin blackholes s's proxy while s holds an ephemeral node and
// returns how long before the server expired the session (seen as the
// node's deletion by the observer obs) s's epoch ended locally. The
// deletion is seen one notification after the server deleted it, which
// adds a few milliseconds to the figure.
func blackholeMargin(t *testing.T, c *zktest.Cluster, p *zktest.Proxy, s, obs *conn.Session, node string) time.Duration {
	t.Helper()
	ctx := context.Background()
	ep := epoch(t, s)
	_, err := ep.Create(ctx, node, nil, zk.FlagEphemeral, s.ACL())
	require.NoError(t, err)
	ok, _, watch, err := epoch(t, obs).ExistsW(ctx, node)
	require.NoError(t, err)
	require.True(t, ok)
	sub := s.Subscribe()
	defer sub.Close()

	cut := time.Now()
	p.Blackhole()
	lost := expectPast(t, sub, 3*ep.Timeout(), conn.Lost)
	require.ErrorIs(t, lost.Err, conn.ErrSessionTimeout)
	var deleted time.Time
	select {
	case ev := <-watch:
		deleted = time.Now()
		require.Equal(t, zk.EventNodeDeleted, ev.Type)
	case <-time.After(3 * ep.Timeout()):
		t.Fatal("the server did not expire the session")
	}
	t.Logf("session timeout %v: ended locally %v after the blackhole, expired by the server (node deleted) after %v: margin %v",
		ep.Timeout(), lost.Time.Sub(cut).Round(time.Millisecond), deleted.Sub(cut).Round(time.Millisecond),
		deleted.Sub(lost.Time).Round(time.Millisecond))
	p.Heal()
	expect(t, sub, 20*time.Second, conn.Connected)
	return deleted.Sub(lost.Time)
}

// TestQuorumTimerMarginUnderBlackhole measures, on a standalone server,
// how long before the server expires a blackholed session the epoch ends
// locally. With the quorum timer (the default) the server counts from the
// last request it received, no earlier than the send time of the last
// sync answered, and the epoch ends half a session timeout after that send
// time: the margin is at least T/2 (here 1.5 s), less the client's own
// scheduling delay (100 ms allowed). With WithQuorumTimer(false) the
// margin is whatever the server's tick rounding leaves; it is logged, not
// asserted.
func TestQuorumTimerMarginUnderBlackhole(t *testing.T) {
	const timeout = 3 * time.Second
	c := zktest.New(t)
	obs := connect(t, c.Servers())
	t.Run("quorum", func(t *testing.T) {
		p := zktest.NewProxy(t, c.Servers())
		s := connect(t, p.Addrs(), conn.WithSessionTimeout(timeout))
		worst := time.Duration(1<<63 - 1)
		for i := range 3 {
			worst = min(worst, blackholeMargin(t, c, p, s, obs, c.Root()+"-q"+string(rune('0'+i))))
		}
		t.Logf("worst margin over 3 rounds: %v (bound T/2 = %v)", worst.Round(time.Millisecond), timeout/2)
		assert.GreaterOrEqual(t, worst, timeout/2-100*time.Millisecond)
	})
	t.Run("legacy", func(t *testing.T) {
		p := zktest.NewProxy(t, c.Servers())
		s := connect(t, p.Addrs(), conn.WithSessionTimeout(timeout), conn.WithQuorumTimer(false))
		for i := range 3 {
			blackholeMargin(t, c, p, s, obs, c.Root()+"-l"+string(rune('0'+i)))
		}
	})
}
