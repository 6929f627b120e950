package leader_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// terms records the terms of Run's functions on one clock (this process's).
type terms struct {
	mu   sync.Mutex
	list []term
}

type term struct {
	who        string
	start, end time.Time // end zero while the term runs
}

// fn is a term function for participant who: it records when it starts and
// when its ctx is cancelled.
func (r *terms) fn(who string) func(ctx context.Context, lease *conn.Lease) error {
	return func(ctx context.Context, _ *conn.Lease) error {
		r.mu.Lock()
		i := len(r.list)
		r.list = append(r.list, term{who: who, start: time.Now()})
		r.mu.Unlock()
		<-ctx.Done()
		r.mu.Lock()
		r.list[i].end = time.Now()
		r.mu.Unlock()
		return nil
	}
}

func (r *terms) snapshot() []term {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]term(nil), r.list...)
}

// leading reports whether who has a term that has not ended.
func (r *terms) leading(who string) bool {
	for _, t := range r.snapshot() {
		if t.who == who && t.end.IsZero() {
			return true
		}
	}
	return false
}

// ledSince reports whether a term begun after since runs.
func (r *terms) ledSince(since time.Time) bool {
	for _, t := range r.snapshot() {
		if t.start.After(since) && t.end.IsZero() {
			return true
		}
	}
	return false
}

// overlap is the longest time two participants' terms ran at once (0 if
// never); a term not ended counts as running until now.
func (r *terms) overlap() time.Duration {
	ts := r.snapshot()
	var worst time.Duration
	for i, a := range ts {
		for _, b := range ts[i+1:] {
			if a.who == b.who {
				continue
			}
			ae, be := a.end, b.end
			if ae.IsZero() {
				ae = time.Now()
			}
			if be.IsZero() {
				be = time.Now()
			}
			worst = max(worst, minTime(ae, be).Sub(maxTime(a.start, b.start)))
		}
	}
	return worst
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestNoOverlapWhenTheLeadersFollowerLosesQuorum is the ensemble
// scenario: participant A leads, and its client reaches one follower only
// (a proxy to it); B's client reaches the two other servers. The leader
// server and the other follower are frozen for 4.5 s, then resumed. The
// follower left without a quorum goes on answering A's pings for a while;
// the resumed leader expires A's session from the last activity it saw, and
// B leads. A's term must have ended (its Run ctx cancelled) before B's term
// begins, in every round. A's sessions last 3 s; B's 10 s, so that B's
// session survives the freeze and B takes over at once.
//
// ZKRECIPES_OVERLAP_ROUNDS sets the number of rounds (default 3).
func TestNoOverlapWhenTheLeadersFollowerLosesQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server ensemble")
	}
	rounds := 3
	if v := os.Getenv("ZKRECIPES_OVERLAP_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		rounds = n
	}
	c := zktest.New(t, zktest.WithServers(3))
	var worst time.Duration
	for round := 0; round < rounds; round++ {
		ov := overlapRound(t, c, round)
		t.Logf("round %d: overlap %v", round, ov.Round(time.Millisecond))
		worst = max(worst, ov)
	}
	t.Logf("worst overlap over %d rounds: %v", rounds, worst.Round(time.Millisecond))
	assert.Zero(t, worst, "two leaders at once")
}

func overlapRound(t *testing.T, c *zktest.Cluster, round int) time.Duration {
	wctx := testzk.Ctx(t, time.Minute)
	require.NoError(t, c.WaitServing(wctx))
	lead, err := c.Leader()
	require.NoError(t, err)
	others := []int{}
	for i := range c.Servers() {
		if i != lead {
			others = append(others, i)
		}
	}
	f, o := others[0], others[1]
	servers := c.Servers()
	proxy := zktest.NewProxy(t, []string{servers[f]})
	defer proxy.Close()

	connect := func(addrs []string, timeout time.Duration) *conn.Session {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := conn.Connect(ctx, addrs, conn.WithSessionTimeout(timeout))
		require.NoError(t, err)
		return s
	}
	sa := connect(proxy.Addrs(), 3*time.Second)
	defer sa.Close()
	sb := connect([]string{servers[lead], servers[o]}, 10*time.Second)
	defer sb.Close()

	path := c.Root() + "/overlap-" + strconv.Itoa(round)
	ea, err := leader.New(sa, path, "A", leader.WithRequeue())
	require.NoError(t, err)
	eb, err := leader.New(sb, path, "B", leader.WithRequeue())
	require.NoError(t, err)

	rec := &terms{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func(e *leader.Election, who string) {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := e.Run(ctx, rec.fn(who)); err != nil && ctx.Err() == nil {
				t.Logf("round %d: %s: Run: %v; again", round, who, err)
			}
		}
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Add(1)
	go run(ea, "A")
	testzk.Eventually(t, 20*time.Second, func() bool { return rec.leading("A") }, "A leads")
	wg.Add(1)
	go run(eb, "B")
	testzk.Eventually(t, 20*time.Second, func() bool {
		ps, err := ea.Participants(ctx)
		return err == nil && len(ps) == 2
	}, "B campaigns")

	start := time.Now()
	require.NoError(t, c.Pause(lead))
	require.NoError(t, c.Pause(o))
	time.Sleep(4500 * time.Millisecond) // the fault's length, not a wait for a state
	require.NoError(t, c.Resume(lead))
	require.NoError(t, c.Resume(o))
	// Someone leads again once the ensemble serves and A's session has
	// expired on the server: usually B, within 5 s of the freeze; A again
	// when B's own session was lost under load and A queued first. What is
	// measured is the overlap, not who leads next.
	testzk.Eventually(t, 60*time.Second, func() bool { return rec.ledSince(start) }, "a term begun after the freeze")
	// A's term, if it still runs, ends when its session does: measure the
	// whole overlap.
	for deadline := time.Now().Add(10 * time.Second); rec.leading("A") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	for _, tm := range rec.snapshot() {
		end := "running"
		if !tm.end.IsZero() {
			end = tm.end.Sub(start).Round(time.Millisecond).String()
		}
		t.Logf("round %d: %s from %v to %s (from the freeze)", round, tm.who, tm.start.Sub(start).Round(time.Millisecond), end)
	}
	return rec.overlap()
}
