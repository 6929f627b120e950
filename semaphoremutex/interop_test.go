package semaphoremutex_test

import (
	"bufio"
	"bytes"
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

	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// curator compiles the Curator contender once and returns the java
// arguments that run it.
func curator(t *testing.T) []string {
	t.Helper()
	cp := testzk.CompileCurator(t, "testdata/CuratorSemaphore.java")
	return []string{"-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-cp", cp, "CuratorSemaphore"}
}

// TestInteropWithCurator: Curator's InterProcessSemaphoreMutex (1 lease)
// and InterProcessSemaphoreV2 (2 leases), two sessions each, share a path
// with two of ours: never more holders than leases, and everyone gets its
// turns.
func TestInteropWithCurator(t *testing.T) {
	java := curator(t)
	c := testzk.Shared(t)
	for _, leases := range []int{1, 2} {
		t.Run(fmt.Sprintf("leases=%d", leases), func(t *testing.T) {
			const peers, rounds, holdMillis = 2, 20, 5
			path := testzk.Path(t, c, "sem")
			ctx := testzk.Ctx(t, 2*time.Minute)
			var (
				mu    sync.Mutex
				holds []hold
				wg    sync.WaitGroup
				errs  = make(chan error, peers+1)
			)
			record := func(who int, start, end time.Time) {
				mu.Lock()
				defer mu.Unlock()
				holds = append(holds, hold{who: who, start: start, end: end})
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
						record(-1, time.Unix(0, s), time.Unix(0, e))
					}
				}
				if err := cmd.Wait(); err != nil {
					errs <- fmt.Errorf("curator: %w: %s", err, stderr.String())
				}
			}()

			_, err = stdin.Write([]byte("go\n")) // everyone starts at once
			require.NoError(t, err)
			for i, s := range sessions {
				sem, err := semaphoremutex.NewSemaphore(s, path, leases)
				require.NoError(t, err)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < rounds; r++ {
						l, err := sem.Acquire(ctx)
						if err != nil {
							errs <- fmt.Errorf("zkrecipes %d: %w", i, err)
							return
						}
						start := time.Now()
						time.Sleep(holdMillis * time.Millisecond) // the work done under the lease
						record(i, start, time.Now())
						if err := sem.Release(ctx, l); err != nil {
							errs <- fmt.Errorf("zkrecipes %d: %w", i, err)
							return
						}
					}
				}()
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
			assert.Len(t, holds, 2*peers*rounds, "everyone's holds")
			assert.LessOrEqual(t, maxOverlap(holds), leases, "never more holders than leases")
			sort.Slice(holds, func(i, j int) bool { return holds[i].start.Before(holds[j].start) })
			switches := 0
			for i := 1; i < len(holds); i++ {
				if (holds[i].who < 0) != (holds[i-1].who < 0) {
					switches++
				}
			}
			assert.Greater(t, switches, 3, "Curator's clients and ours really took turns")
			t.Logf("%d holds, %d switches between Curator and zkrecipes, at most %d at once", len(holds), switches, maxOverlap(holds))
			assert.Empty(t, ephemerals(t, testzk.Connect(t, c.Servers()), path), "nothing left")
		})
	}
}
