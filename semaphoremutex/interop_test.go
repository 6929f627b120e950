package semaphoremutex_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// curator compiles the Curator contender once and returns the java
// arguments that run it.
func curator(t *testing.T) []string {
	t.Helper()
	cp := testzk.CompileCurator(t, "testdata/CuratorSemaphore.java")
	return []string{"-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-cp", cp, "CuratorSemaphore"}
}

// interopSide is how our contenders run against Curator's: as many
// sessions as Curator has clients, goroutines of their own on each, through
// a Semaphore of leases leases per session, or with passes > 0 a Mutex per
// goroutine with WithLocalHandoff(passes, 0).
type interopSide struct {
	leases     int
	goroutines int
	passes     int
}

// contender returns the acquire and release of one goroutine of ours on
// session s: sem is the session's Semaphore, made on its first goroutine.
func (side interopSide) contender(t *testing.T, s *conn.Session, path string, sem **semaphoremutex.Semaphore) (
	acquire func(context.Context) (*conn.Lease, error), release func(context.Context, *conn.Lease) error) {
	t.Helper()
	if side.passes > 0 {
		m, err := semaphoremutex.New(s, path, lock.WithLocalHandoff(side.passes, 0))
		require.NoError(t, err)
		return m.Acquire, func(ctx context.Context, _ *conn.Lease) error { return m.Release(ctx) }
	}
	if *sem == nil {
		var err error
		*sem, err = semaphoremutex.NewSemaphore(s, path, side.leases)
		require.NoError(t, err)
	}
	return (*sem).Acquire, (*sem).ReturnLease
}

// TestInteropWithCurator: Curator's InterProcessSemaphoreMutex (1 lease)
// and InterProcessSemaphoreV2 (2 leases), two sessions each, share a path
// with two of ours: never more holders than leases, and everyone gets its
// turns. With in-process handoff (Mutex with WithLocalHandoff, three
// goroutines per session, each with its own handle) against
// InterProcessSemaphoreMutex: local handoffs happen (grants share a lease
// node), a node stays in the process for at most passes+1 grants, and
// Curator's clients wait at most 2·sessions·(passes+1) of our grants
// between two of theirs.
func TestInteropWithCurator(t *testing.T) {
	java := curator(t)
	c := testzk.Shared(t)
	for _, side := range []interopSide{{leases: 1, goroutines: 1}, {leases: 2, goroutines: 1}, {leases: 1, goroutines: 3, passes: 2}} {
		name := fmt.Sprintf("leases=%d", side.leases)
		if side.passes > 0 {
			name += "/local-handoff"
		}
		t.Run(name, func(t *testing.T) {
			const peers, rounds, holdMillis = 2, 20, 5
			leases := side.leases
			path := testzk.Path(t, c, "sem")
			ctx := testzk.Ctx(t, 2*time.Minute)
			var (
				mu    sync.Mutex
				holds []hold
				wg    sync.WaitGroup
				errs  = make(chan error, peers*side.goroutines+1)
			)
			// Ours start once Curator's first hold is over: from then on its
			// clients are in their loops, queued or holding, so that how long
			// they wait for their turns is measured.
			curatorIn := make(chan struct{})
			record := func(h hold) {
				mu.Lock()
				defer mu.Unlock()
				holds = append(holds, h)
				if h.who < 0 && len(holds) == 1 {
					close(curatorIn)
				}
			}

			args := append(java, strings.Join(c.Servers(), ","), path, strconv.Itoa(leases),
				strconv.Itoa(peers), strconv.Itoa(rounds), strconv.Itoa(holdMillis))
			cmd := exec.CommandContext(ctx, "java", args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			sc := bufio.NewScanner(stdout)
			if !sc.Scan() || sc.Text() != "ready" {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("curator did not start: %q %s", sc.Text(), stderr.String())
			}
			sessions := testzk.ConnectN(t, c.Servers(), peers)
			wg.Add(1)
			go func() { // Curator's holds are who = -1
				defer wg.Done()
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) == 4 && f[0] == "hold" {
						s, _ := strconv.ParseInt(f[1], 10, 64)
						e, _ := strconv.ParseInt(f[2], 10, 64)
						record(hold{who: -1, start: time.Unix(0, s), end: time.Unix(0, e)})
					}
				}
				if err := cmd.Wait(); err != nil {
					errs <- fmt.Errorf("curator: %w: %s", err, stderr.String())
				}
			}()

			_, err = stdin.Write([]byte("go\n")) // everyone starts at once
			require.NoError(t, err)
			for i, s := range sessions {
				var sem *semaphoremutex.Semaphore
				for range side.goroutines {
					acquire, release := side.contender(t, s, path, &sem)
					wg.Add(1)
					go func() {
						defer wg.Done()
						select {
						case <-curatorIn:
						case <-ctx.Done():
							errs <- fmt.Errorf("zkrecipes %d: Curator did not take a lease: %w", i, ctx.Err())
							return
						}
						for r := 0; r < rounds; r++ {
							l, err := acquire(ctx)
							if err != nil {
								errs <- fmt.Errorf("zkrecipes %d: %w", i, err)
								return
							}
							start := time.Now()
							time.Sleep(holdMillis * time.Millisecond) // the work done under the lease
							record(hold{who: i, start: start, end: time.Now(), node: l.Path()})
							if err := release(ctx, l); err != nil {
								errs <- fmt.Errorf("zkrecipes %d: %w", i, err)
								return
							}
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			byCurator := 0
			for _, h := range holds {
				if h.who < 0 {
					byCurator++
				}
			}
			assert.Equal(t, peers*rounds, byCurator, "Curator's holds")
			assert.Len(t, holds, (1+side.goroutines)*peers*rounds, "everyone's holds")
			assert.LessOrEqual(t, maxOverlap(holds), leases, "never more holders than leases")
			sort.Slice(holds, func(i, j int) bool { return holds[i].start.Before(holds[j].start) })
			switches := 0
			for i := 1; i < len(holds); i++ {
				if (holds[i].who < 0) != (holds[i-1].who < 0) {
					switches++
				}
			}
			assert.Greater(t, switches, 3, "Curator's clients and ours really took turns")
			turns := make([]locktest.Turn, len(holds))
			for i, h := range holds {
				turns[i] = locktest.Turn{Node: h.node, Start: h.start}
				if h.who < 0 {
					turns[i].Foreign = "curator"
				}
			}
			f := locktest.CheckTurns(t, turns, peers, side.passes)
			t.Logf("%d holds, %d switches between Curator and zkrecipes, at most %d at once; %d local handoffs, at most %d grants on one lease node, at most %d of ours between two of Curator's",
				len(holds), switches, maxOverlap(holds), f.LocalHandoffs, f.MaxPerNode, f.MaxRun)
			assert.Empty(t, ephemerals(t, testzk.Connect(t, c.Servers()), path), "nothing left")
		})
	}
}
