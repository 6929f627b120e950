package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestFollowerCutOffFromQuorumKeepsAnsweringPings measures the unsafe
// window of docs/safety.md: a client connected to a follower that loses the
// rest of the ensemble keeps hearing pings until the follower notices that
// it lost the leader, syncLimit × tickTime after the leader's last packet
// (zktest: tickTime 500 ms, syncLimit 5 ticks, so 2.5 s), longer than the
// session timeout (1 s here). The other two servers are paused (zktest can
// freeze servers, not cut the links between them), so here nobody expires
// the session; in a real partition the leader's side would have expired it
// about one session timeout after the cut, while this client still heard
// nothing wrong.
//
// With WithLastHeardTimer() the local timer starts only at the
// disconnect, so the epoch outlives the freeze by the follower's window plus
// a session timeout. With the quorum timer (the default) the syncs go
// unanswered from the freeze on, and the epoch ends within 7/12 of a
// session timeout of it, while the follower still answers pings (Lost
// comes before any Suspended).
func TestFollowerCutOffFromQuorumKeepsAnsweringPings(t *testing.T) {
	const timeout = time.Second // the server's minimum: 2 ticks
	c := zktest.New(t, zktest.WithServers(3))
	for _, quorum := range []bool{false, true} {
		require.NoError(t, c.WaitServing(context.Background()))
		leader, err := c.Leader()
		require.NoError(t, err)
		f := (leader + 1) % 3
		s := connect(t, []string{c.Servers()[f]}, timerOpts(quorum, conn.WithSessionTimeout(timeout))...)
		ep := epoch(t, s)
		require.Equal(t, timeout, connlink.Of(ep).Timeout())
		sub := subscribe(t, s)

		cut := time.Now()
		for i := range 3 {
			if i != f {
				require.NoError(t, c.Pause(i))
			}
		}
		paused := time.Since(cut)
		if quorum {
			ev := next(t, sub, 30*time.Second)
			require.Equal(t, conn.Lost, ev.State, "the quorum timer ends the epoch before the follower stops answering: got %s", describe(ev))
			assert.ErrorIs(t, ev.Err, conn.ErrSessionTimeout)
			lost := ev.Time.Sub(cut)
			t.Logf("quorum timer: quorum paused in %v; Lost %v after the pause began, the follower still answering; session timeout %v",
				paused, lost, timeout)
			assert.LessOrEqual(t, lost, timeout*7/12+paused+100*time.Millisecond, "within 7T/12 of the last answered sync")
		} else {
			ev := expect(t, sub, 30*time.Second, conn.Suspended)
			suspended := ev.Time.Sub(cut)
			ev = expect(t, sub, 30*time.Second, conn.Lost)
			lost := ev.Time.Sub(cut)
			assert.ErrorIs(t, ev.Err, conn.ErrSessionTimeout)
			t.Logf("last-heard timer: quorum paused in %v; client Suspended %v after the pause began, Lost (local timer) after %v; session timeout %v",
				paused, suspended, lost, timeout)
			// go-zookeeper drops a connection that is silent for 2/3 of the
			// session timeout: being Suspended only later means the follower kept
			// answering its pings for longer than a whole session timeout.
			assert.Greater(t, suspended, timeout+paused, "the follower answered pings for longer than the session timeout")
		}
		_, _, err = connlink.Of(ep).Exists(context.Background(), "/")
		assert.ErrorIs(t, err, conn.ErrEpochEnded)
		s.Close()
		for i := range 3 {
			require.NoError(t, c.Resume(i))
		}
	}
}
