package recipes_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// hold is one stretch of time a contender held the lock; node is our
// grant's lock node ("" for the other clients').
type hold struct {
	who        string
	start, end int64 // unix nanoseconds
	node       string
}

// interopSide is how our contenders run against Curator's and kazoo's.
type interopSide struct {
	sessions   int
	goroutines int // per session, sharing the session's handle
	passes     int // WithLocalHandoff(passes, 0); 0: without local handoff
}

// TestInteropWithCuratorAndKazoo runs our mutex, Curator's InterProcessMutex
// and kazoo's Lock on one lock path at once: no two holders ever overlap.
// Our side runs as two sessions of one goroutine each, and again with
// in-process handoff (WithLocalHandoff) on, three goroutines per session:
// then local handoffs happen (grants share a node), a node stays in the
// process for at most passes+1 grants, and Curator and kazoo still get
// their turns (at most 2·sessions·(passes+1) grants of ours between two
// of theirs).
func TestInteropWithCuratorAndKazoo(t *testing.T) {
	cp := testzk.CompileCurator(t, "testdata/interop/CuratorMutex.java")
	err := exec.Command("/usr/bin/python3", "-c", "import kazoo.recipe.lock").Run()
	testzk.Need(t, "kazoo (apt-get install python3-kazoo)", err)
	c := newZK(t)
	t.Run("plain", func(t *testing.T) {
		interopCuratorKazoo(t, c, cp, "plain", interopSide{sessions: 2, goroutines: 1})
	})
	t.Run("local-handoff", func(t *testing.T) {
		interopCuratorKazoo(t, c, cp, "handoff", interopSide{sessions: 2, goroutines: 3, passes: 2})
	})
}

// interopCuratorKazoo is one run of TestInteropWithCuratorAndKazoo, on a
// lock path of its own (named after tag), with our side as side says.
func interopCuratorKazoo(t *testing.T, c *zktest.Cluster, cp, tag string, side interopSide) {
	servers := strings.Join(c.Servers(), ",")
	lockPath := c.Root() + "/interop-" + tag + "/lock"
	guard := c.Root() + "-guard-" + tag
	const rounds, holdMillis = 15, 5
	var opts []lock.Option
	if side.passes > 0 {
		opts = append(opts, lock.WithLocalHandoff(side.passes, 0))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		mu         sync.Mutex
		holds      []hold
		violations int
		wg         sync.WaitGroup
		errs       = make(chan error, 2+side.sessions*side.goroutines)
	)
	// Our contenders start once Curator and kazoo have each held the lock
	// once: from then on both are in their loops, queued or holding, so
	// that how long they wait for their turns is measured.
	foreignIn := make(chan struct{})
	foreignHeld := map[string]bool{}
	record := func(h hold, violated bool) {
		mu.Lock()
		defer mu.Unlock()
		holds = append(holds, h)
		if violated {
			violations++
		}
		if h.node == "" && h.start != 0 && !foreignHeld[h.who] {
			foreignHeld[h.who] = true
			if len(foreignHeld) == 2 {
				close(foreignIn)
			}
		}
	}

	peer := func(name string, cmd *exec.Cmd) {
		defer wg.Done()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			errs <- err
			return
		}
		if err := cmd.Start(); err != nil {
			errs <- fmt.Errorf("%s: %w", name, err)
			return
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 1 && f[0] == "violation":
				record(hold{who: name}, true)
			case len(f) == 3 && f[0] == "hold":
				s, _ := strconv.ParseInt(f[1], 10, 64)
				e, _ := strconv.ParseInt(f[2], 10, 64)
				record(hold{who: name, start: s, end: e}, false)
			}
		}
		if err := cmd.Wait(); err != nil {
			errs <- fmt.Errorf("%s: %w: %s", name, err, stderr.String())
		}
	}
	args := []string{servers, lockPath, guard, strconv.Itoa(rounds), strconv.Itoa(holdMillis)}
	wg.Add(2)
	go peer("curator", exec.CommandContext(ctx, "java", append([]string{"-cp", cp, "CuratorMutex"}, args...)...))
	go peer("kazoo", exec.CommandContext(ctx, "/usr/bin/python3", append([]string{"testdata/interop/kazoo_lock.py"}, args...)...))

	for g := 0; g < side.sessions; g++ {
		s, err := conn.Connect(ctx, c.Servers())
		require.NoError(t, err)
		defer s.Close()
		m, err := mutex.New(s, lockPath, opts...)
		require.NoError(t, err)
		for k := 0; k < side.goroutines; k++ {
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				select {
				case <-foreignIn:
				case <-ctx.Done():
					errs <- fmt.Errorf("%s: Curator and kazoo did not both take the lock: %w", name, ctx.Err())
					return
				}
				for i := 0; i < rounds; i++ {
					if err := goRound(ctx, name, s, m, guard, holdMillis, record); err != nil {
						errs <- err
						return
					}
				}
			}(fmt.Sprintf("zkrecipes-%d-%d", g, k))
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	assert.Zero(t, violations, "a holder found someone else inside")
	perPeer := map[string]int{}
	for _, h := range holds {
		perPeer[strings.SplitN(h.who, "-", 2)[0]]++
	}
	assert.Equal(t, map[string]int{"curator": rounds, "kazoo": rounds, "zkrecipes": side.sessions * side.goroutines * rounds}, perPeer)
	sort.Slice(holds, func(i, j int) bool { return holds[i].start < holds[j].start })
	for i := 1; i < len(holds); i++ {
		if holds[i].start < holds[i-1].end {
			t.Errorf("overlap: %s held [%d, %d] and %s from %d", holds[i-1].who, holds[i-1].start, holds[i-1].end, holds[i].who, holds[i].start)
		}
	}
	switches := 0
	for i := 1; i < len(holds); i++ {
		if holds[i].who != holds[i-1].who {
			switches++
		}
	}
	assert.Greater(t, switches, 10, "the peers really contended: the lock passed between them")
	turns := make([]locktest.Turn, len(holds))
	for i, h := range holds {
		turns[i] = locktest.Turn{Node: h.node, Start: time.Unix(0, h.start)}
		if h.node == "" {
			turns[i].Foreign = h.who
		}
	}
	f := locktest.CheckTurns(t, turns, side.sessions, side.passes)
	t.Logf("%d holds by %v, %d handoffs between different contenders, no overlap; %d local handoffs, at most %d grants on one node, at most %d of ours between two turns of Curator or kazoo",
		len(holds), perPeer, switches, f.LocalHandoffs, f.MaxPerNode, f.MaxRun)
}

func goRound(ctx context.Context, name string, s *conn.Session, m *mutex.InterProcessMutex, guard string, holdMillis int, record func(hold, bool)) error {
	lease, err := m.Acquire(lock.WithLabel(ctx, name)) // a labelled node: still opaque data to Curator and kazoo
	if err != nil {
		return fmt.Errorf("%s: acquire: %w", name, err)
	}
	start := time.Now().UnixNano()
	ep := lease.Epoch()
	_, err = connlink.Of(ep).Create(ctx, guard, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
	violated := errors.Is(err, zk.ErrNodeExists)
	if err != nil && !violated {
		return fmt.Errorf("%s: guard: %w", name, err)
	}
	time.Sleep(time.Duration(holdMillis) * time.Millisecond) // the critical section
	if !violated {
		if err := connlink.Of(ep).Delete(ctx, guard, -1); err != nil {
			return fmt.Errorf("%s: guard: %w", name, err)
		}
	}
	end := time.Now().UnixNano()
	record(hold{who: name, start: start, end: end, node: lease.Path()}, violated)
	if err := m.Release(ctx); err != nil {
		return fmt.Errorf("%s: release: %w", name, err)
	}
	return nil
}
