package attack_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// serverOf returns the index of the server that lists session sid in cons.
func serverOf(f *fixture, sid int64) int {
	for i := range f.Servers() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		out, err := f.FourLetter(ctx, i, "cons")
		cancel()
		if err == nil && strings.Contains(out, fmt.Sprintf("sid=0x%x", sid)) {
			return i
		}
	}
	return -1
}

// TestEnsembleHolderSurvivesItsServerKilled checks conn/doc.go's
// "Suspended (connection broke; the session may live), Reconnected (same
// session back)" and mutex/doc.go's "Mutual exclusion ... as long as each
// holder's session lives", on a three-server ensemble: the server the
// holder is connected to is killed (SIGKILL); the holder's session moves to
// another server and keeps its lock (lease not lost, guarded writes
// commit), the waiter (on another server) keeps waiting, and gets the lock
// once the holder releases; the killed server restarts and agrees.
func TestEnsembleHolderSurvivesItsServerKilled(t *testing.T) {
	f := newFixture(t, zktest.WithServers(3))
	ctx := ctxT(t, 28*time.Second)
	sa := f.Session(conn.WithSessionTimeout(6 * time.Second))
	path := f.Path("ens-kill")
	ma, _ := mutex.New(sa, path)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	sid := la.Epoch().SessionID()
	srv := -1
	waitFor(t, 5*time.Second, "the holder's server", func() bool { srv = serverOf(f, sid); return srv >= 0 })
	var others []string
	for i, a := range f.Servers() {
		if i != srv {
			others = append(others, a)
		}
	}
	mb, _ := mutex.New(f.SessionAt(others), path)
	b := hold(ctx, mb)
	waitFor(t, 5*time.Second, "the waiter's node", func() bool { return len(children(f.Raw(), path)) == 2 })
	require.NoError(t, f.Kill(srv))
	waitFor(t, 15*time.Second, "the holder to reconnect", func() bool { return sa.State() == conn.Reconnected })
	if la.Err() != nil {
		t.Fatalf("holder's lease lost across its server's death: %v", la.Err())
	}
	require.NoError(t, guardedCreate(ctx, la, path+"-res"), "guarded write after the failover")
	if len(b.got)+len(b.failed) > 0 {
		t.Fatal("waiter entered (or failed) while the holder's session lives")
	}
	require.NoError(t, ma.Release(ctx))
	b.wait(t, 10*time.Second, "waiter, after the release")
	require.NoError(t, f.Restart(srv))
	require.NoError(t, f.WaitServing(ctx))
}

// TestEnsembleKillsUnderSharedListings checks mutex's "Mutual
// exclusion ... as long as each holder's session lives" and conn.Fence's
// growth with the quorum timer on a three-server ensemble whose servers are
// killed and restarted one at a time (the sessions move), while 2 sessions
// × 5 goroutines (one handle each session with WithLocalHandoff) queue on
// one path and share listings. A grant whose lease is lost on entry (the
// quorum timer may end an epoch across a kill) is not counted. Every
// counted holder writes a register through GuardedWrite with the version
// it read; the in-process ledger and fences are checked at every entry.
func TestEnsembleKillsUnderSharedListings(t *testing.T) {
	f := newFixture(t, zktest.WithServers(3))
	ctx := ctxT(t, 29*time.Second)
	path := f.Path("r2-ens/lock")
	reg := f.Path("r2-ens-reg")
	f.Register(reg, []byte("0"))
	var occ occupancy
	var grants, lostOnEntry atomic.Int32
	var fences fenceStore
	stop := time.Now().Add(9 * time.Second)
	killed := make(chan struct{})
	go func() { // kills and restarts while the goroutines below run
		defer close(killed)
		for i := 0; i < 2; i++ {
			time.Sleep(2 * time.Second)
			k := i % 3
			if err := f.Kill(k); err != nil {
				t.Errorf("kill %d: %v", k, err)
				return
			}
			time.Sleep(500 * time.Millisecond)
			if err := f.Restart(k); err != nil {
				t.Errorf("restart %d: %v", k, err)
				return
			}
		}
	}()
	mk := func(s *conn.Session) [2]*mutex.InterProcessMutex {
		m1, m2 := mutexPair(s, path)
		return [2]*mutex.InterProcessMutex{m1, m2}
	}
	onSessions(f, 2, 5, mk, func(ms [2]*mutex.InterProcessMutex, g int) {
		m := ms[g%5%2]
		for time.Now().Before(stop) && ctx.Err() == nil {
			actx, cancel := context.WithTimeout(ctx, 15*time.Second)
			l, err := m.Acquire(actx)
			cancel()
			if err != nil {
				if errors.Is(err, conn.ErrLeaseLost) || errors.Is(err, conn.ErrEpochEnded) {
					continue
				}
				t.Errorf("g%d: acquire: %v", g, err)
				return
			}
			fe, ferr := l.Fence(ctx)
			if ferr != nil || l.Err() != nil {
				lostOnEntry.Add(1)
				_ = m.Release(context.WithoutCancel(ctx))
				continue
			}
			if n := occ.enter(); n != 1 {
				t.Errorf("g%d: %d holders", g, n)
			}
			if prev, ok := fences.write(fmt.Sprint("g", g), fe); !ok {
				t.Errorf("g%d: fence %v not above %v", g, fe, prev)
			}
			grants.Add(1)
			// Read through the holder's own epoch after a sync: a read
			// of the bystander may come from a lagging follower (it
			// reconnects elsewhere when its server is killed).
			ep := l.Epoch()
			if err := connlink.Of(ep).Sync(ctx, reg); err == nil {
				if data, st, err := connlink.Of(ep).Get(ctx, reg); err == nil {
					n, _ := strconv.Atoi(string(data))
					err := guardedSet(ctx, l, reg, []byte(strconv.Itoa(n+1)), st.Version)
					if err != nil && !errors.Is(err, conn.ErrLeaseLost) && !errors.Is(err, conn.ErrConnectionLoss) && !errors.Is(err, conn.ErrEpochEnded) {
						t.Errorf("g%d: guarded write: %v", g, err)
					}
				}
			}
			occ.leave()
			if err := m.Release(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, conn.ErrLeaseLost) {
				t.Logf("g%d: release: %v", g, err)
			}
		}
	})
	<-killed
	t.Logf("%d counted grants, %d lost on entry", grants.Load(), lostOnEntry.Load())
}
