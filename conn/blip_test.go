package conn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// blip blackholes p right after a sync of the quorum timer reaches the
// server, whose answer is lost: the last sync answered was sent a whole
// sync period before the cut, the worst case for the timer (the blackhole
// is armed as a sync is sent, which is that one or the next). It heals p
// (the proxy resets the connections) d after the cut, and reports whether
// s's epoch lived through it: Reconnected on the same epoch, and no Lost
// for a session timeout after that.
func blip(t *testing.T, p *zktest.Proxy, s *conn.Session, d time.Duration) bool {
	t.Helper()
	ep := epoch(t, s)
	sub := subscribe(t, s)
	n := connlink.Of(s).Stats().QuorumSyncs
	waitUntil(t, 5*time.Second, "a sync of the quorum timer", func() bool { return connlink.Of(s).Stats().QuorumSyncs > n })
	p.BlackholeAfterNextOp()
	waitUntil(t, 5*time.Second, "the blackhole", p.Blackholed)
	cut := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), cut.Add(d))
	defer cancel()
	var seen []string
	var lost *conn.Event
read:
	for lost == nil {
		select {
		case ev := <-sub:
			seen = append(seen, fmt.Sprintf("%v@+%v", ev.State, ev.Time.Sub(cut).Round(time.Millisecond)))
			if ev.State == conn.Lost {
				lost = &ev
			}
		case <-ctx.Done():
			break read
		}
	}
	<-ctx.Done()
	p.Heal()
	for {
		var ev conn.Event
		if lost != nil {
			ev, lost = *lost, nil
		} else {
			ev = next(t, sub, 20*time.Second)
			seen = append(seen, fmt.Sprintf("%v@+%v", ev.State, ev.Time.Sub(cut).Round(time.Millisecond)))
		}
		switch ev.State {
		case conn.Reconnected:
			require.Same(t, ep, ev.Epoch)
			quiet := true
			select {
			case ev := <-sub:
				quiet = false
				seen = append(seen, fmt.Sprintf("%v@+%v", ev.State, ev.Time.Sub(cut).Round(time.Millisecond)))
			case <-time.After(connlink.Of(ep).Timeout()):
			}
			t.Logf("blackhole of %v: %v", d, seen)
			return quiet && ep.Err() == nil
		case conn.Lost:
			t.Logf("blackhole of %v: %v", d, seen)
			require.Same(t, ep, ev.Epoch)
			require.ErrorIs(t, ev.Err, conn.ErrSessionTimeout)
			expect(t, sub, 20*time.Second, conn.Connected)
			return false
		}
	}
}

// TestQuorumTimerKeepsSessionThroughABlip: with the quorum timer and a
// session timeout T = 4 s, a connection blackholed for 1 s or 1.5 s (the
// answer of the sync in flight lost) then reset keeps its epoch, on a
// standalone server and through a follower of a three-server ensemble:
// detection, redial and the reconnect's handshake all fit in the T/2 the
// timer leaves after the last sync answered. One address only, as a
// standalone server or a load balancer gives, so go-zookeeper redials the
// same server.
func TestQuorumTimerKeepsSessionThroughABlip(t *testing.T) {
	const timeout = 4 * time.Second
	for _, servers := range []int{1, 3} {
		t.Run(fmt.Sprintf("servers=%d", servers), func(t *testing.T) {
			c := zktest.New(t, zktest.WithServers(servers))
			target := c.Servers()[0]
			if servers == 3 {
				leader, err := c.Leader()
				require.NoError(t, err)
				target = c.Servers()[(leader+1)%3]
			}
			p := zktest.NewProxy(t, []string{target})
			s := connect(t, p.Addrs(), conn.WithSessionTimeout(timeout))
			require.Equal(t, timeout, connlink.Of(epoch(t, s)).Timeout())
			for _, d := range []time.Duration{time.Second, 1500 * time.Millisecond} {
				for i := range 3 {
					if !blip(t, p, s, d) {
						t.Errorf("round %d: a blackhole of %v ended the epoch (session timeout %v)", i, d, timeout)
					}
				}
			}
		})
	}
}
