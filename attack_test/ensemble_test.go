package attack_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
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
	sb := f.SessionAt(others)
	mb, _ := mutex.New(sb, path)
	bGot := make(chan error, 1)
	bRel := make(chan struct{})
	go func() {
		_, err := mb.Acquire(ctx)
		bGot <- err
		if err == nil {
			<-bRel
			_ = mb.Release(context.WithoutCancel(ctx))
		}
	}()
	defer close(bRel)
	zc := f.Raw()
	waitFor(t, 5*time.Second, "the waiter's node", func() bool { return len(children(zc, path)) == 2 })
	require.NoError(t, f.Kill(srv))
	waitFor(t, 15*time.Second, "the holder to reconnect", func() bool { return sa.State() == conn.Reconnected })
	if la.Err() != nil {
		t.Fatalf("holder's lease lost across its server's death: %v", la.Err())
	}
	_, err = la.GuardedWrite(ctx, &zk.CreateRequest{Path: path + "-res", Acl: zk.WorldACL(zk.PermAll)})
	require.NoError(t, err, "guarded write after the failover")
	select {
	case err := <-bGot:
		t.Fatalf("waiter entered (err=%v) while the holder's session lives", err)
	default:
	}
	require.NoError(t, ma.Release(ctx))
	select {
	case err := <-bGot:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not granted 10 s after the release")
	}
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
	bys := f.Raw()
	_, _ = bys.Create(f.Root(), nil, 0, zk.WorldACL(zk.PermAll))
	_, err := bys.Create(reg, []byte("0"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	var inside, grants, lostOnEntry int32
	var mu sync.Mutex
	var last conn.Fence
	stop := time.Now().Add(9 * time.Second)
	var wg sync.WaitGroup
	for si := 0; si < 2; si++ {
		s := f.Session()
		m1, _ := mutex.New(s, path)
		m2, _ := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
		for g := 0; g < 5; g++ {
			m := m1
			if g%2 == 1 {
				m = m2
			}
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
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
					f, ferr := l.Fence(ctx)
					if ferr != nil || l.Err() != nil {
						atomic.AddInt32(&lostOnEntry, 1)
						_ = m.Release(context.WithoutCancel(ctx))
						continue
					}
					if n := atomic.AddInt32(&inside, 1); n != 1 {
						t.Errorf("g%d: %d holders", g, n)
					}
					mu.Lock()
					if f.Compare(last) <= 0 {
						t.Errorf("g%d: fence %v not above %v", g, f, last)
					}
					last = f
					mu.Unlock()
					atomic.AddInt32(&grants, 1)
					// Read through the holder's own epoch after a sync: a read
					// of the bystander may come from a lagging follower (it
					// reconnects elsewhere when its server is killed).
					ep := l.Epoch()
					if err := connlink.Of(ep).Sync(ctx, reg); err == nil {
						if data, st, err := connlink.Of(ep).Get(ctx, reg); err == nil {
							n, _ := strconv.Atoi(string(data))
							_, err := l.GuardedWrite(ctx, &zk.SetDataRequest{Path: reg, Data: []byte(strconv.Itoa(n + 1)), Version: st.Version})
							if err != nil && !errors.Is(err, conn.ErrLeaseLost) && !errors.Is(err, conn.ErrConnectionLoss) && !errors.Is(err, conn.ErrEpochEnded) {
								t.Errorf("g%d: guarded write: %v", g, err)
							}
						}
					}
					atomic.AddInt32(&inside, -1)
					if err := m.Release(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, conn.ErrLeaseLost) {
						t.Logf("g%d: release: %v", g, err)
					}
				}
			}(si*5 + g)
		}
	}
	for i := 0; i < 2; i++ {
		time.Sleep(2 * time.Second)
		k := i % 3
		require.NoError(t, f.Kill(k))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, f.Restart(k))
	}
	wg.Wait()
	t.Logf("%d counted grants, %d lost on entry", grants, lostOnEntry)
}
