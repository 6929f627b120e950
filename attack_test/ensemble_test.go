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

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/leader"
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
	f, ctx := setUp(t, 28*time.Second, zktest.WithServers(3))
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
	f, ctx := setUp(t, 29*time.Second, zktest.WithServers(3))
	path := f.Path("ens/lock")
	reg := f.Path("ens-reg")
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

// slowLink holds a mutex through a proxy whose latency is set once the
// lease is held, and, for 8 s or until the lease is lost, sends syncs of its
// own on the same epoch one after the other (200 ms apart), recording each
// one's round trip. It returns whether the lease survived, the longest sync
// round trip and the longest time between two answered syncs.
func slowLink(t *testing.T, T, latency time.Duration, opts ...conn.Option) (kept bool, maxRTT, maxGap time.Duration) {
	f, ctx := setUp(t, 25*time.Second)
	px, s := f.ProxiedSession(append([]conn.Option{conn.WithSessionTimeout(T)}, opts...)...)
	m, _ := mutex.New(s, f.Root()+"/slow/lock")
	h := hold(ctx, m)
	l := h.wait(t, 10*time.Second, "holder")
	lost := l.Lost()
	ep, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)
	px.SetLatency(latency)
	t.Cleanup(func() { px.SetLatency(0) })
	t0 := time.Now()
	last := t0
	end := t0.Add(8 * time.Second)
	var mu sync.Mutex
	for time.Now().Before(end) {
		sent := time.Now()
		sctx, cancel := context.WithTimeout(ctx, T)
		err := connlink.Of(ep).Sync(sctx, "/")
		cancel()
		if err != nil {
			// An epoch that ended under the sync fails it: wait for Lost.
			within(lost, time.Second)
		}
		select {
		case <-lost:
			t.Logf("T = %v, latency %v: lease lost %v after the latency was set (%v); our syncs: longest round trip %v, longest gap between answers %v",
				T, latency, time.Since(t0), l.Err(), maxRTT, maxGap)
			return false, maxRTT, maxGap
		default:
		}
		require.NoError(t, err, "sync on a live epoch")
		now := time.Now()
		mu.Lock()
		if d := now.Sub(sent); d > maxRTT {
			maxRTT = d
		}
		if d := now.Sub(last); d > maxGap {
			maxGap = d
		}
		last = now
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("T = %v, latency %v: lease kept 8 s; our syncs: longest round trip %v, longest gap between answers %v", T, latency, maxRTT, maxGap)
	return true, maxRTT, maxGap
}

// TestQuorumTimerEndsEpochOnASlowLink checks conn's description of the
// quorum timer's cost: an epoch also ends on a live connection when no sync
// is answered for about T/2 (a slow link). T = 4 s; the proxy delays each
// chunk by 1.2 s, so every round trip is over 7T/12 (2.33 s). With 500 ms
// a chunk, round trips of 1.0–1.8 s, the lease may live or not. The
// last-heard timer keeps the lease at 500 ms (the control).
func TestQuorumTimerEndsEpochOnASlowLink(t *testing.T) {
	const T = 4 * time.Second
	t.Run("quorum-timer", func(t *testing.T) {
		if kept, maxRTT, _ := slowLink(t, T, 1200*time.Millisecond); kept {
			t.Fatalf("lease kept 8 s over a link whose round trip reached %v (T/2 = %v)", maxRTT, T/2)
		}
	})
	t.Run("last-heard-timer-control", func(t *testing.T) {
		if kept, _, _ := slowLink(t, T, 500*time.Millisecond, conn.WithLastHeardTimer()); !kept {
			t.Fatal("lease lost with the last-heard timer too")
		}
	})
}

// TestQuorumTimerKeepsLeaseOnFasterLink is the other side of the
// finding above: with 150 ms per chunk the lease lives for 8 s.
func TestQuorumTimerKeepsLeaseOnFasterLink(t *testing.T) {
	if kept, rtt, _ := slowLink(t, 4*time.Second, 150*time.Millisecond); !kept {
		t.Fatalf("lease lost with syncs answered within %v", rtt)
	}
}

// followerAndRest starts a three-server ensemble and connects one session
// to a follower alone (f1, the server to freeze) and one to the two others,
// both with session timeout T = 4 s.
func followerAndRest(t *testing.T) (f *fixture, f1 int, onFollower, onRest *conn.Session) {
	t.Helper()
	const T = 4 * time.Second
	f = newFixture(t, zktest.WithServers(3))
	ld, err := f.Leader()
	require.NoError(t, err)
	f1, f2 := (ld+1)%3, (ld+2)%3
	srv := f.Servers()
	onFollower = f.SessionAt([]string{srv[f1]}, conn.WithSessionTimeout(T))
	onRest = f.SessionAt([]string{srv[ld], srv[f2]}, conn.WithSessionTimeout(T))
	return f, f1, onFollower, onRest
}

// TestQuorumTimerNoOverlapWhenLeadersServerFreezes checks leader.Run's
// "The session ending unseen (partition, a server cut off from its quorum,
// a frozen leader): with the session's quorum timer (the default ...), the
// epoch ends, and fn's ctx is cancelled, before the ensemble can expire the
// session and let another participant lead: at least T/3 − tickTime/2
// before", with a fault the project's own test does not use: the follower
// the leading participant is connected to is frozen (SIGSTOP), so its
// client's connection stays open and silent while the rest of the ensemble
// keeps its quorum and expires the session. The leading participant's
// session knows only that follower's address. The second participant's term
// must start after the first's fn ctx is done, by at least a margin.
func TestQuorumTimerNoOverlapWhenLeadersServerFreezes(t *testing.T) {
	f, f1, s1, s2 := followerAndRest(t)
	ctx := ctxT(t, 29*time.Second)
	path := f.Path("quorum/election")
	e1, _ := leader.New(s1, path, "one")
	e2, _ := leader.New(s2, path, "two")

	var mu sync.Mutex
	var end1, start2 time.Time
	leading := make(chan struct{})
	go func() {
		_ = e1.Run(ctx, func(fctx context.Context, _ *conn.Lease) error {
			close(leading)
			<-fctx.Done()
			mu.Lock()
			end1 = time.Now()
			mu.Unlock()
			return nil
		})
	}()
	select {
	case <-leading:
	case <-ctx.Done():
		t.Fatal("one never led")
	}
	started2 := make(chan struct{})
	go func() {
		_ = e2.Run(ctx, func(fctx context.Context, _ *conn.Lease) error {
			mu.Lock()
			start2 = time.Now()
			mu.Unlock()
			close(started2)
			<-fctx.Done()
			return nil
		})
	}()
	waitFor(t, 10*time.Second, "two queued", func() bool {
		ps, err := e2.Participants(ctx)
		return err == nil && len(ps) == 2
	})
	require.NoError(t, f.Pause(f1))
	paused := time.Now()
	defer func() { _ = f.Resume(f1) }()
	recv(t, started2, 20*time.Second, "two never led after one's server froze")
	mu.Lock()
	defer mu.Unlock()
	if end1.IsZero() {
		t.Fatalf("two leads (%v after the freeze) while one's fn ctx is still live", start2.Sub(paused))
	}
	t.Logf("one's term ended %v after the freeze, two's began %v after it (margin %v)",
		end1.Sub(paused), start2.Sub(paused), start2.Sub(end1))
	if !end1.Before(start2) {
		t.Fatalf("overlap: two began %v before one's term ended", end1.Sub(start2))
	}
}

// TestQuorumTimerHandoffHolderFrozenServer checks mutex's "The holder
// can always learn that the lock is no longer safe: Lease.Lost closes when the
// session's epoch ends (expiry, or the local timer while cut off)" with conn's
// quorum timer ("the epoch ends ... connected to a follower, T/3 − tickTime/2
// before the leader can" expire the session) and WithLocalHandoff's "the
// node is handed on only while its epoch lives", on a three-server ensemble:
// A (only one follower's address, a handoff handle) holds with G1 while G2
// waits in the process; B (the other servers) queues. The follower is frozen
// (SIGSTOP). G1's Lost must close before B is granted; G1 then releases and
// G2 must not be handed the node; B's guarded write must commit and B's
// fence be above G1's.
func TestQuorumTimerHandoffHolderFrozenServer(t *testing.T) {
	f, f1, sA, sB := followerAndRest(t)
	ctx := ctxT(t, 29*time.Second)
	path := f.Path("qmutex/lock")
	reg := f.Path("qmutex-reg")
	mA, _ := mutex.New(sA, path, lock.WithLocalHandoff(5, 0))
	mB, _ := mutex.New(sB, path)
	ep, err := connlink.Of(sB).Epoch(ctx)
	require.NoError(t, err)
	_ = connlink.Of(ep).CreateParents(ctx, reg)
	_, err = sB.Create(ctx, reg, nil, 0, zkWorld)
	require.NoError(t, err)
	g1 := hold(ctx, mA)
	l1 := g1.wait(t, 10*time.Second, "G1")
	f1Fence := fenceOf(t, ctx, l1)
	lost1 := l1.Lost()
	b := hold(ctx, mB)
	waitFor(t, 10*time.Second, "B queued", func() bool {
		ch, _, err := sB.Children(ctx, path)
		return err == nil && len(ch) == 2
	})
	g2 := hold(ctx, mA)
	waitFor(t, 10*time.Second, "G2 waiting in the process", func() bool { return watched(f, f1, l1.Path()) })
	var mu sync.Mutex
	var lostAt time.Time
	go func() {
		<-lost1
		mu.Lock()
		lostAt = time.Now()
		mu.Unlock()
	}()
	require.NoError(t, f.Pause(f1))
	paused := time.Now()
	defer func() { _ = f.Resume(f1) }()
	lb := b.wait(t, 20*time.Second, "B")
	grantedB := time.Now()
	mu.Lock()
	la := lostAt
	mu.Unlock()
	if la.IsZero() || !la.Before(grantedB) {
		t.Fatalf("B granted %v after the freeze while G1's Lost was open (closed at %v)", grantedB.Sub(paused), la)
	}
	t.Logf("G1's Lost closed %v after the freeze, B granted %v after it", la.Sub(paused), grantedB.Sub(paused))
	rel := make(chan error, 1)
	go func() { rel <- g1.release() }()
	if l2, ok := within(g2.got, time.Second); ok {
		t.Fatalf("G2 handed %s while B holds", l2.Path())
	}
	err = guardedSet(ctx, lb, reg, []byte("b"), -1)
	require.NoError(t, err, "B's guarded write")
	fb, err := lb.Fence(ctx)
	if err != nil || fb.Compare(f1Fence) <= 0 {
		t.Fatalf("B's fence %v (%v) not above G1's %v", fb, err, f1Fence)
	}
	require.NoError(t, b.release())
	_ = f.Resume(f1)
	t.Logf("G1's release: %v", recv(t, rel, 10*time.Second, "G1's release hangs after the server resumed"))
}
