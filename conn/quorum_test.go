package conn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// blackholeMargin blackholes s's proxy while s holds an ephemeral node and
// returns how long before the server expired the session (seen as the
// node's deletion by the observer obs) s's epoch ended locally. The
// deletion is seen one notification after the server deleted it, which
// adds a few milliseconds to the figure.
func blackholeMargin(t *testing.T, p *zktest.Proxy, s, obs *conn.Session, node string) time.Duration {
	t.Helper()
	ctx := context.Background()
	ep := epoch(t, s)
	_, err := connlink.Of(ep).Create(ctx, node, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	require.NoError(t, err)
	// obs may read from another server, which may not have applied the
	// create yet: its exists watch then fires on the creation.
	var watch <-chan zk.Event
	for {
		ok, _, w, err := connlink.Of(epoch(t, obs)).ExistsW(ctx, node)
		require.NoError(t, err)
		if ok {
			watch = w
			break
		}
		select {
		case ev := <-w:
			require.Equal(t, zk.EventNodeCreated, ev.Type)
		case <-time.After(10 * time.Second):
			t.Fatal("the observer never saw the node")
		}
	}
	sub := subscribe(t, s)

	cut := time.Now()
	p.Blackhole()
	lost := expectPast(t, sub, 3*connlink.Of(ep).Timeout(), conn.Lost)
	require.ErrorIs(t, lost.Err, conn.ErrSessionTimeout)
	var deleted time.Time
	select {
	case ev := <-watch:
		deleted = time.Now()
		require.Equal(t, zk.EventNodeDeleted, ev.Type)
	case <-time.After(3 * connlink.Of(ep).Timeout()):
		t.Fatal("the server did not expire the session")
	}
	t.Logf("session timeout %v: ended locally %v after the blackhole, expired by the server (node deleted) after %v: margin %v",
		connlink.Of(ep).Timeout(), lost.Time.Sub(cut).Round(time.Millisecond), deleted.Sub(cut).Round(time.Millisecond),
		deleted.Sub(lost.Time).Round(time.Millisecond))
	p.Heal()
	expect(t, sub, 20*time.Second, conn.Connected)
	return deleted.Sub(lost.Time)
}

// TestQuorumTimerMarginUnderBlackhole measures how long before the server
// expires a blackholed session the epoch ends locally, on a standalone
// server and on a three-server ensemble (the client connected to a
// follower), with session timeout T = 3 s and tickTime 500 ms.
//
// With the quorum timer (the default) the epoch ends 7T/12 after the send
// time of the last sync answered. A standalone server counts from the last
// request it received, after that send time: the margin is at least 5T/12
// (1.25 s). The leader of an ensemble hears of the session from the
// follower's replies to its pings (every tickTime/2), and the client sent
// a sync at least every T/12: the margin is at least T/3 − tickTime/2
// (750 ms). Both less the client's own scheduling delay (100 ms allowed).
// With WithLastHeardTimer() the margin is whatever the server's tick
// rounding leaves; it is logged, not asserted.
func TestQuorumTimerMarginUnderBlackhole(t *testing.T) {
	const timeout = 3 * time.Second
	const tick = 500 * time.Millisecond // zktest's default
	for _, servers := range []int{1, 3} {
		t.Run(fmt.Sprintf("servers=%d", servers), func(t *testing.T) {
			c := zktest.New(t, zktest.WithServers(servers))
			target := c.Servers()[0]
			bound := timeout * 5 / 12
			if servers == 3 {
				leader, err := c.Leader()
				require.NoError(t, err)
				target = c.Servers()[(leader+1)%3]
				bound = timeout/3 - tick/2
			}
			obs := connect(t, c.Servers())
			for _, quorum := range []bool{true, false} {
				p := zktest.NewProxy(t, []string{target})
				s := connect(t, p.Addrs(), timerOpts(quorum, conn.WithSessionTimeout(timeout))...)
				worst, rounds := time.Duration(1<<63-1), 3
				if !quorum {
					rounds = 1 // logged only
				}
				for i := range rounds {
					worst = min(worst, blackholeMargin(t, p, s, obs, fmt.Sprintf("%s-%v-%d", c.Root(), quorum, i)))
				}
				if quorum {
					t.Logf("quorum timer: worst margin over %d rounds: %v (stated bound %v)", rounds, worst.Round(time.Millisecond), bound)
					assert.GreaterOrEqual(t, worst, bound-100*time.Millisecond)
				}
				s.Close()
			}
		})
	}
}

// timerOpts is opts with the quorum timer (the default) or, with quorum
// false, the last-heard timer.
func timerOpts(quorum bool, opts ...conn.Option) []conn.Option {
	if !quorum {
		opts = append(opts, conn.WithLastHeardTimer())
	}
	return opts
}
