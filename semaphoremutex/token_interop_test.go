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
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// grant is one hold and its fencing token.
type grant struct {
	curator bool
	start   time.Time
	token   int64
}

// TestTokensGrowWithCurator: with one lease, Curator's contenders
// (InterProcessSemaphoreMutex, or InterProcessSemaphoreV2 with one lease)
// and ours (Mutex, or Semaphore with one lease) take turns on one path;
// every grant's fencing token (Curator's: its lease node's czxid, read
// while holding; ours: Lease.Fence, whose Zxid is that czxid and whose
// Pass is 0 without local handoff) is above the one before, in grant
// order. With one lease the holds do not overlap, so grant order is the
// order of the holds' starts (one clock: same machine).
func TestTokensGrowWithCurator(t *testing.T) {
	java := curator(t)
	c := testzk.Shared(t)
	for _, kind := range []string{"mutex", "v2"} {
		t.Run(kind, func(t *testing.T) {
			const peers, rounds, holdMillis = 2, 15, 3
			path := testzk.Path(t, c, "tok")
			ctx := testzk.Ctx(t, 2*time.Minute)
			var (
				mu     sync.Mutex
				grants []grant
				wg     sync.WaitGroup
				errs   = make(chan error, peers+1)
			)
			record := func(g grant) {
				mu.Lock()
				defer mu.Unlock()
				grants = append(grants, g)
			}

			args := append(java, strings.Join(c.Servers(), ","), path, "1",
				strconv.Itoa(peers), strconv.Itoa(rounds), strconv.Itoa(holdMillis), kind)
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
			go func() {
				defer wg.Done()
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) == 4 && f[0] == "hold" {
						s, _ := strconv.ParseInt(f[1], 10, 64)
						tok, _ := strconv.ParseInt(f[3], 10, 64)
						record(grant{curator: true, start: time.Unix(0, s), token: tok})
					}
				}
				if err := cmd.Wait(); err != nil {
					errs <- fmt.Errorf("curator: %w: %s", err, stderr.String())
				}
			}()

			before := make([]connlink.Stats, len(sessions))
			for i, s := range sessions {
				before[i] = connlink.Of(s).Stats()
			}
			_, err = stdin.Write([]byte("go\n"))
			require.NoError(t, err)
			for i, s := range sessions {
				acquire, release := oneLease(t, s, path, kind)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < rounds; r++ {
						l, err := acquire(ctx)
						if err != nil {
							errs <- fmt.Errorf("zkrecipes %d: %w", i, err)
							return
						}
						start := time.Now()
						f, err := l.Fence(ctx)
						if err != nil {
							errs <- fmt.Errorf("zkrecipes %d: token: %w", i, err)
							return
						}
						if f.Pass != 0 {
							errs <- fmt.Errorf("zkrecipes %d: fence %v: a pass without local handoff", i, f)
							return
						}
						tok := f.Zxid
						time.Sleep(holdMillis * time.Millisecond) // the work done under the lease
						record(grant{start: start, token: tok})
						if err := release(ctx, l); err != nil {
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
			require.Equal(t, 2*peers*rounds, len(grants), "everyone's grants")
			sort.Slice(grants, func(i, j int) bool { return grants[i].start.Before(grants[j].start) })
			handoffs, decreases := 0, 0
			for i := 1; i < len(grants); i++ {
				p, g := grants[i-1], grants[i]
				if p.curator && !g.curator {
					handoffs++
				}
				if g.token <= p.token {
					decreases++
					t.Errorf("grant %d (curator %v) has token %d after %d (curator %v)", i, g.curator, g.token, p.token, p.curator)
				}
			}
			assert.GreaterOrEqual(t, handoffs, 3, "grants handed from Curator's holders to ours")
			var reqs int64
			for i, s := range sessions {
				reqs += connlink.Of(s).Stats().Sub(before[i]).TotalRequests()
			}
			t.Logf("%d grants, %d from a Curator holder to ours, %d tokens not above the one before; "+
				"our requests per grant (acquire, Fence, release): %.1f", len(grants), handoffs, decreases,
				float64(reqs)/float64(peers*rounds))
			assert.Empty(t, ephemerals(t, testzk.Connect(t, c.Servers()), path), "nothing left")
		})
	}
}

// oneLease is our one-lease contender for kind: a Mutex ("mutex") or a
// Semaphore with one lease ("v2").
func oneLease(t *testing.T, s *conn.Session, path, kind string) (
	acquire func(context.Context) (*conn.Lease, error), release func(context.Context, *conn.Lease) error) {
	t.Helper()
	if kind == "mutex" {
		m, err := semaphoremutex.New(s, path)
		require.NoError(t, err)
		return m.Acquire, func(ctx context.Context, _ *conn.Lease) error { return m.Release(ctx) }
	}
	sem, err := semaphoremutex.NewSemaphore(s, path, 1)
	require.NoError(t, err)
	return sem.Acquire, sem.ReturnLease
}
