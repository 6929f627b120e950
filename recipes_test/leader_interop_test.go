package recipes_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// curatorLatch is one Curator LeaderLatch process (testdata/interop/
// CuratorLatch.java), driven on its stdin.
type curatorLatch struct {
	id    string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startLatch(t *testing.T, cp string, servers []string, path, id string) *curatorLatch {
	t.Helper()
	cmd := exec.Command("java", "-cp", cp, "CuratorLatch", strings.Join(servers, ","), path, id, "4000")
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	j := &curatorLatch{id: id, cmd: cmd, in: in, lines: make(chan string, 64)}
	go func() {
		defer close(j.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			j.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { j.kill() })
	select {
	case l := <-j.lines:
		require.Equal(t, "started", l)
	case <-time.After(30 * time.Second):
		t.Fatalf("Curator latch %s did not start", id)
	}
	return j
}

// state asks the latch whether it leads and whom Curator sees leading.
func (j *curatorLatch) state(t *testing.T) (bool, string) {
	t.Helper()
	_, err := io.WriteString(j.in, "state\n")
	require.NoError(t, err)
	for {
		select {
		case l, ok := <-j.lines:
			require.True(t, ok, "latch %s exited", j.id)
			if f := strings.Fields(l); len(f) == 3 && f[0] == "state" {
				return f[1] == "true", f[2]
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("latch %s did not answer", j.id)
		}
	}
}

func (j *curatorLatch) kill() {
	if j.cmd.Process != nil {
		_ = j.cmd.Process.Kill()
		_ = j.cmd.Wait()
	}
}

// goLatch is one of our participants, campaigning in the background.
type goLatch struct {
	e     *leader.Election
	s     *conn.Session
	lease atomic.Pointer[conn.Lease] // the campaign's, once it leads
	done  chan error
}

func campaignGo(ctx context.Context, t *testing.T, servers []string, path, id string) *goLatch {
	t.Helper()
	s := testzk.Connect(t, servers, conn.WithSessionTimeout(4*time.Second))
	e, err := leader.New(s, path, id)
	require.NoError(t, err)
	g := &goLatch{e: e, s: s, done: make(chan error, 1)}
	go func() {
		l, err := e.Campaign(ctx)
		g.lease.Store(l)
		g.done <- err
	}()
	return g
}

// leads reports whether the campaign led and its lease is not lost.
func (g *goLatch) leads() bool {
	l := g.lease.Load()
	return l != nil && l.Err() == nil
}

// TestLeaderInteropWithCuratorLatch elects among our participants and
// Curator's LeaderLatch on one path while participants resign, are killed
// and come back, and sessions expire: at every step exactly one
// participant leads, and both libraries name the same leader.
func TestLeaderInteropWithCuratorLatch(t *testing.T) {
	cp := testzk.CompileCurator(t, "testdata/interop/CuratorLatch.java")
	c := newZK(t)
	servers := c.Servers()
	path := c.Root() + "/election"
	ctx := testzk.Ctx(t, 3*time.Minute)
	observer := testzk.Connect(t, servers)
	obs, err := leader.New(observer, path, "observer")
	require.NoError(t, err)

	queued := func(n int) {
		testzk.Eventually(t, 30*time.Second, func() bool {
			ps, err := obs.Participants(ctx)
			return err == nil && len(ps) == n
		}, "%d participants", n)
	}
	gos := map[string]*goLatch{}
	javas := map[string]*curatorLatch{}
	// exactlyOne waits until want leads as seen by everyone: our
	// participants, Curator's, and Leader from both libraries.
	exactlyOne := func(want string) {
		t.Helper()
		var last string
		testzk.Eventually(t, 30*time.Second, func() bool {
			var leaders []string
			for id, g := range gos {
				if g.leads() {
					leaders = append(leaders, id)
				}
			}
			seen := map[string]bool{}
			for id, j := range javas {
				has, who := j.state(t)
				if has {
					leaders = append(leaders, id)
				}
				seen[who] = true
			}
			who, err := obs.Leader(ctx)
			if err == nil {
				seen[who.ID] = true
			}
			last = fmt.Sprintf("leaders %v, named %v", leaders, seen)
			return len(leaders) == 1 && leaders[0] == want && len(seen) == 1 && seen[want]
		}, "exactly one leader %s", want)
		t.Logf("%s leads: %s", want, last)
	}

	gos["go-1"] = campaignGo(ctx, t, servers, path, "go-1")
	require.NoError(t, <-gos["go-1"].done)
	javas["java-1"] = startLatch(t, cp, servers, path, "java-1")
	queued(2)
	gos["go-2"] = campaignGo(ctx, t, servers, path, "go-2")
	queued(3)
	javas["java-2"] = startLatch(t, cp, servers, path, "java-2")
	queued(4)
	exactlyOne("go-1")

	// Our leader resigns: Curator's follower, watching our node, takes over
	// (no handover mark: LeaderLatch reacts to the deletion only).
	require.NoError(t, gos["go-1"].e.Resign(ctx))
	exactlyOne("java-1")

	// Curator's leader is killed: its session expires, ours takes over.
	javas["java-1"].kill()
	delete(javas, "java-1")
	require.NoError(t, <-gos["go-2"].done)
	exactlyOne("go-2")

	// It comes back, at the end of the line.
	javas["java-1"] = startLatch(t, cp, servers, path, "java-1")
	queued(3)
	// Our leader's session expires: Curator's next in line takes over, and
	// our stale leader knows it lost.
	g2 := gos["go-2"]
	lease := g2.lease.Load()
	require.NotNil(t, lease)
	ep := lease.Epoch()
	require.NoError(t, zktest.ExpireEpoch(ctx, servers[0], ep))
	<-ep.Done()
	<-lease.Lost()
	require.True(t, errors.Is(lease.Err(), conn.ErrLeaseLost))
	exactlyOne("java-2")

	// Our first participant campaigns again, behind java-1; Curator's
	// leader closes its latch and java-1 leads, then java-1's process is
	// killed and ours leads.
	gos["go-1"] = campaignGo(ctx, t, servers, path, "go-1")
	queued(3)
	_, err = io.WriteString(javas["java-2"].in, "close\n")
	require.NoError(t, err)
	exactlyOne("java-1")
	javas["java-1"].kill()
	delete(javas, "java-1")
	require.NoError(t, <-gos["go-1"].done)
	exactlyOne("go-1")
	require.NoError(t, gos["go-1"].e.Resign(ctx))
}
