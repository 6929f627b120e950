package leader_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// failoverTimeout is the session timeout of the failover test's sessions.
const failoverTimeout = 4 * time.Second

// TestFailover measures, on a three-server ensemble, how long the election
// is without a leader when the leader's process is killed (its connections
// close and it never reconnects: the proxy in front of it is closed) and
// when it is partitioned from every server (the proxy blackholes its
// traffic): from the fault to the follower's Campaign returning. It logs
// the figures (docs/leader.md quotes them) and fails if the follower does
// not take over within three session timeouts, or if the partitioned
// leader is not told within two.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server ensemble")
	}
	c := zktest.New(t, zktest.WithServers(3))
	for _, mode := range []string{"killed", "partitioned"} {
		t.Run(mode, func(t *testing.T) {
			path := c.Root() + "/failover-" + mode
			p := zktest.NewProxy(t, c.Servers())
			ls := testzk.Connect(t, p.Addrs(), conn.WithSessionTimeout(failoverTimeout))
			fs := testzk.Connect(t, c.Servers(), conn.WithSessionTimeout(failoverTimeout))
			le := newElection(t, ls, path, "leader")
			fe := newElection(t, fs, path, "follower")
			ctx := testzk.Ctx(t, time.Minute)
			lease, err := le.Campaign(ctx)
			require.NoError(t, err)
			lost := lease.Lost() // armed while connected
			before := testzk.WatchesSet(fs)
			took := make(chan time.Time, 1)
			go func() {
				if _, err := fe.Campaign(ctx); assert.NoError(t, err) {
					took <- time.Now()
				}
			}()
			testzk.Watching(t, fs, before)

			start := time.Now()
			if mode == "killed" {
				p.Close()
			} else {
				p.Blackhole()
			}
			var told time.Duration
			if mode == "partitioned" {
				select {
				case <-lost:
					told = time.Since(start)
					assert.ErrorIs(t, lease.Err(), conn.ErrSessionTimeout)
				case <-time.After(2 * failoverTimeout):
					t.Fatalf("the partitioned leader was not told within %v", 2*failoverTimeout)
				}
			}
			select {
			case at := <-took:
				t.Logf("failover (%s, 3 servers, session timeout %v): new leader after %v", mode, failoverTimeout,
					at.Sub(start).Round(time.Millisecond))
				if mode == "partitioned" {
					t.Logf("failover (%s): the old leader was told after %v", mode, told.Round(time.Millisecond))
				}
			case <-time.After(3 * failoverTimeout):
				t.Fatalf("no new leader within %v", 3*failoverTimeout)
			}
			require.NoError(t, fe.Resign(ctx))
		})
	}
}
