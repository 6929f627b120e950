package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The fault primitives shared by the fault run (faultrun_*) and the chaos
// run (chaos_*): each applies one fault and undoes it. At most one server
// is down (killed or paused) at a time when callers apply them one after
// another, so the ensemble keeps its quorum.

// killRestart kills the leader (or a random follower), keeps it down for
// 1–3 s, restarts it and waits until every server serves.
func killRestart(t *testing.T, c *zktest.Cluster, rng *rand.Rand, leader bool) (string, error) {
	i, err := pickServer(c, rng, leader)
	if err != nil {
		return "", err
	}
	down := time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
	if err := c.Kill(i); err != nil {
		return "", err
	}
	time.Sleep(down)
	if err := restartServer(t, c, i); err != nil {
		return "", err
	}
	return fmt.Sprintf("server %d down for %v", i, down.Round(time.Millisecond)), waitServing(c)
}

// pauseResume pauses a random server for 0.5–3 s, resumes it and waits
// until every server serves.
func pauseResume(c *zktest.Cluster, rng *rand.Rand) (string, error) {
	i := rng.IntN(len(c.Servers()))
	d := 500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond)))
	if err := c.Pause(i); err != nil {
		return "", err
	}
	time.Sleep(d)
	if err := c.Resume(i); err != nil {
		return "", err
	}
	return fmt.Sprintf("server %d paused for %v", i, d.Round(time.Millisecond)), waitServing(c)
}

// blackholeFor blackholes p for longer than the session timeout st (long:
// st+1–3 s, the session expires) or shorter (st/4–st/2), heals it and
// returns how long it lasted.
func blackholeFor(rng *rand.Rand, p *zktest.Proxy, st time.Duration, long bool) time.Duration {
	var d time.Duration
	if long {
		d = st + time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
	} else {
		d = st/4 + time.Duration(rng.Int64N(int64(st/4)))
	}
	p.Blackhole()
	time.Sleep(d)
	p.Heal()
	return d
}

// expireSession makes a random server expire sess's current ZooKeeper
// session; marked is called with the session id just before, so that the
// caller can record when the expiry was asked for.
func expireSession(c *zktest.Cluster, rng *rand.Rand, sess *conn.Session, marked func(sid int64)) (int64, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ep, err := connlink.Of(sess).Epoch(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("no live session: %w", err)
	}
	srv := c.Servers()[rng.IntN(len(c.Servers()))]
	marked(ep.SessionID())
	return ep.SessionID(), srv, zktest.ExpireEpoch(ctx, srv, ep)
}

// restartServer starts killed server i again. It tries three times, and
// fails the test if the server stays down: the next fault could cost the
// quorum.
func restartServer(t *testing.T, c *zktest.Cluster, i int) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.Restart(i); err == nil {
			return nil
		}
	}
	t.Fatalf("server %d does not restart: %v", i, err)
	return err
}

// pickServer returns the leader, or a random follower.
func pickServer(c *zktest.Cluster, rng *rand.Rand, leader bool) (int, error) {
	l, err := c.Leader()
	if err != nil {
		return -1, err
	}
	if leader {
		return l, nil
	}
	var followers []int
	for i := range c.Servers() {
		if i != l {
			followers = append(followers, i)
		}
	}
	return followers[rng.IntN(len(followers))], nil
}

// waitServing waits until every server serves and one leads.
func waitServing(c *zktest.Cluster) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return c.WaitServing(ctx)
}

// healAll ends every fault: the proxies forward again, every server runs
// and the ensemble has a leader.
func healAll(t *testing.T, c *zktest.Cluster, proxies []*zktest.Proxy) {
	for _, p := range proxies {
		p.Heal()
	}
	for i := range c.Servers() {
		if err := c.Resume(i); err != nil {
			t.Errorf("resume server %d: %v", i, err)
		}
	}
	if err := waitServing(c); err != nil {
		t.Errorf("the ensemble does not serve after the faults: %v", err)
	}
}

// quietLogger keeps go-zookeeper's own client quiet.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// bystanderClient connects a raw go-zookeeper client of its own (a bystander:
// no recipe, no sealing identity) and waits for its session.
func bystanderClient(ctx context.Context, servers []string) (*zk.Conn, error) {
	zc, events, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, fmt.Errorf("raw client: %w", err)
	}
	if err := awaitSession(ctx, events); err != nil {
		zc.Close()
		return nil, fmt.Errorf("raw client: %w", err)
	}
	return zc, nil
}

// awaitSession waits for a raw client's session.
func awaitSession(ctx context.Context, events <-chan zk.Event) error {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return errors.New("closed before a session was established")
			}
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("no session: %w", ctx.Err())
		}
	}
}
