package attack_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestLocalHandoffWaitsForInFlightGuardedWrite checks
// lock.WithLocalHandoff (go doc ./semaphoremutex
// WithLocalHandoff): "A release waits for the guarded writes of its grant
// that are in flight (another goroutine may be writing through the handle's
// lease), so none reaches the server after the next grant exists", and the
// same for lock.WithLocalHandoff, whose doc says "Every grant is a lease of
// its own: released, it refuses guarded writes": with 150 ms of latency on
// the connection, a goroutine's GuardedWrite through grant 1 is in flight
// when grant 1 is released and passed locally to grant 2. Grant 2 must not
// exist before that write has been answered.
func TestLocalHandoffWaitsForInFlightGuardedWrite(t *testing.T) {
	f := newFixture(t)
	type handles struct {
		acquire1, acquire2 func(ctx context.Context) (*conn.Lease, error)
		release1, release2 func(ctx context.Context) error
	}
	cases := []struct {
		name string
		mk   func(s *conn.Session, path string) handles
	}{
		{"semaphoremutex", func(s *conn.Session, path string) handles {
			m1, _ := semaphoremutex.New(s, path, lock.WithLocalHandoff(8, 0))
			m2, _ := semaphoremutex.New(s, path, lock.WithLocalHandoff(8, 0))
			return handles{m1.Acquire, m2.Acquire, m1.Release, m2.Release}
		}},
		{"mutex", func(s *conn.Session, path string) handles {
			m, _ := mutex.New(s, path, lock.WithLocalHandoff(8, 0))
			return handles{m.Acquire, m.Acquire, m.Release, m.Release}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := f.In(t)
			ctx := ctxT(t, 25*time.Second)
			px, s := f.ProxiedSession()
			path := f.Path("inflight-") + tc.name
			res := f.Path("inflight-res-") + tc.name
			h := tc.mk(s, path)
			l1, err := h.acquire1(ctx)
			require.NoError(t, err)
			_, err = connlink.Of(l1.Epoch()).Create(ctx, res, nil, 0, zkWorld)
			require.NoError(t, err)
			var mu sync.Mutex
			var writeDone, grant2 time.Time
			var writeErr error
			g2 := make(chan error, 1)
			rel2 := make(chan struct{})
			go func() { // the second grant, on its own goroutine
				l2, err := h.acquire2(ctx)
				mu.Lock()
				grant2 = time.Now()
				mu.Unlock()
				if err == nil {
					_ = l2
					<-rel2
					err = h.release2(context.WithoutCancel(ctx))
				}
				g2 <- err
			}()
			time.Sleep(100 * time.Millisecond) // let grant 2 queue in the process
			px.SetLatency(150 * time.Millisecond)
			wg := sync.WaitGroup{}
			wg.Add(1)
			go func() { // a writer through grant 1
				defer wg.Done()
				err := guardedSet(ctx, l1, res, []byte("grant1"), -1)
				mu.Lock()
				writeDone, writeErr = time.Now(), err
				mu.Unlock()
			}()
			time.Sleep(30 * time.Millisecond) // the write is on its way (in the proxy's delay)
			require.NoError(t, h.release1(ctx), "release of grant 1")
			wg.Wait()
			waitFor(t, 10*time.Second, "grant 2", func() bool { mu.Lock(); defer mu.Unlock(); return !grant2.IsZero() })
			px.SetLatency(0)
			close(rel2)
			require.NoError(t, <-g2, "grant 2")
			mu.Lock()
			defer mu.Unlock()
			t.Logf("grant 1's write answered %v (err %v); grant 2 at %v", writeDone.Format("15:04:05.000"), writeErr, grant2.Format("15:04:05.000"))
			// The two times are taken by two goroutines after their calls
			// return, so they may come out in either order by a scheduling
			// delay (27 µs seen in CI); a release that did not wait would
			// grant 2 while the write is still in the proxy's 150 ms delay
			// each way, a few hundred ms before its answer.
			if writeErr == nil && grant2.Before(writeDone.Add(-20*time.Millisecond)) {
				d, _, _ := f.Raw().Get(res)
				t.Fatalf("grant 2 existed %v before grant 1's in-flight guarded write was answered (committed: %q)", writeDone.Sub(grant2), d)
			}
		})
	}
}

// TestLocalHandoffRefusedAfterFault checks lock.WithLocalHandoff's
// "the node is handed on only while its epoch lives, the connection is not
// suspended, and no deletion of the node by someone else has been seen (from
// the moment a goroutine waits in the process, the node is watched: one
// getW). Otherwise the release deletes the node and the waiter queues a new
// one", with the fence rule of conn.Fence. G1 holds through a handoff handle
// of session A, B (another session) queues behind, G2 waits in the process
// (its getW is seen on the server); then the fault: a bystander deletes A's
// node, the server expires A's epoch, or A's connection is reset and its
// reconnects blackholed (suspended). Once G1's Lost has closed (or A is suspended) G1
// releases. G2 must not hold while B does, and G2's fence must be above B's.
func TestLocalHandoffRefusedAfterFault(t *testing.T) {
	forEach(t, []string{"bystander-delete", "expire", "suspended"}, func(t *testing.T, f *fixture, fault string) {
		ctx := ctxT(t, 28*time.Second)
		path := f.Path("handoff/lock")
		bys := f.Raw()
		px, sA := f.ProxiedSession(conn.WithSessionTimeout(6 * time.Second))
		mA, _ := mutex.New(sA, path, lock.WithLocalHandoff(5, 0))
		mB, _ := mutex.New(f.Session(), path)
		g1, l1, b, g2 := handoffBehind(t, f, ctx, mA, mB, path)
		lost1 := l1.Lost()
		switch fault {
		case "bystander-delete":
			require.NoError(t, bys.Delete(l1.Path(), -1))
		case "expire":
			ep, err := connlink.Of(sA).Epoch(ctx)
			require.NoError(t, err)
			f.Expire(ctx, ep)
		case "suspended":
			suspend(t, px, sA)
		}
		var lb *conn.Lease
		if fault != "suspended" {
			recv(t, lost1, 10*time.Second, "G1's Lost never closed")
			lb = b.wait(t, 10*time.Second, "B")
		}
		err := g1.release()
		t.Logf("G1's release after the fault: %v", err)
		if fault == "suspended" {
			// G2 must not be handed the node while A is suspended.
			quiet(t, g2.got, 500*time.Millisecond, "G2 granted while A is suspended")
			px.Heal()
			lb = b.wait(t, 15*time.Second, "B")
		}
		select {
		case <-g2.got:
			t.Fatalf("G2 granted while B holds (two holders); nodes %v", children(bys, path))
		case err := <-g2.failed:
			t.Logf("G2's acquire failed: %v", err)
			g2 = nil
		case <-time.After(time.Second):
		}
		fb := fenceOf(t, ctx, lb)
		require.NoError(t, b.release())
		if g2 == nil {
			return
		}
		f2 := fenceOf(t, ctx, g2.wait(t, 15*time.Second, "G2"))
		if f2.Compare(fb) <= 0 {
			t.Fatalf("G2's fence %v not above B's %v", f2, fb)
		}
		t.Logf("B's fence %v, G2's %v", fb, f2)
		require.NoError(t, g2.release())
		waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
	})
}

// TestOwnSessionDeleteOfHeldNode: Lease.Lost closes when "someone else
// deleted its node", and under WithLocalHandoff "the node is not handed on
// once its deletion is seen". As above, with the holder's own Session.Delete
// as the fault: the holder is told (Lost, ErrLeaseLost, one LockLost
// node_deleted) and G2 is not handed the deleted node while B holds.
func TestOwnSessionDeleteOfHeldNode(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	rec, s := f.metered()
	path := f.Path("owndel/m")
	mA, _ := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	mB, _ := mutex.New(f.Session(), path)
	g1, l1, b, g2 := handoffBehind(t, f, ctx, mA, mB, path)
	fe1 := fenceOf(t, ctx, l1)

	require.NoError(t, s.Delete(ctx, l1.Path(), -1), "Session.Delete of our own held node")
	if !closesWithin(l1.Lost(), 5*time.Second) {
		t.Fatalf("the holder was not told: Lost still open 5 s after its node was deleted (Err %v)", l1.Err())
	}
	_, err := l1.GuardedWrite(ctx)
	require.ErrorIs(t, err, conn.ErrLeaseLost, "GuardedWrite after the delete")
	lb := b.wait(t, 10*time.Second, "B, next in the queue")
	require.NoError(t, g1.release(), "release after loss is nil")
	if l2, ok := g2.granted(t, 2*time.Second, "G2"); ok {
		fe := fenceOf(t, ctx, l2)
		t.Errorf("G2 was granted (node %s, fence %v after %v) while B holds %s (Err %v)",
			l2.Path(), fe, fe1, lb.Path(), lb.Err())
	}
	require.NoError(t, b.release())
	g2.wait(t, 10*time.Second, "G2 after B")
	rec.expect(t, 1, metrics.LockLost, "mutex", metrics.CauseNodeDeleted, "losses node_deleted")
	rec.expect(t, 0, metrics.LockHandoff, "mutex", "", "handoffs of the deleted node")
}

// handoffBehind: G1 holds through mA, B (mB, another session) queues
// behind, and G2 waits in the process behind G1 (its getW seen on the
// server).
func handoffBehind(t *testing.T, f *fixture, ctx context.Context, mA, mB *mutex.InterProcessMutex, path string) (g1 *holder, l1 *conn.Lease, b, g2 *holder) {
	t.Helper()
	g1 = hold(ctx, mA)
	l1 = g1.wait(t, 10*time.Second, "G1")
	b = hold(ctx, mB)
	waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(f.Raw(), path)) == 2 })
	g2 = hold(ctx, mA)
	waitFor(t, 10*time.Second, "G2 waiting in the process (getW on G1's node)", func() bool { return watched(f, 0, l1.Path()) })
	return g1, l1, b, g2
}

// askerFirst: after the release of a node whose revoke was seen, asker
// (who revoked) enters, the local waiter g2 not before asker released.
func askerFirst(t *testing.T, asker, g2 *holder) {
	t.Helper()
	la := asker.wait(t, 10*time.Second, "the one who revoked, after the release")
	if l2, ok := g2.granted(t, time.Second, "G2"); ok {
		t.Errorf("G2 was handed %s after a seen revoke while the one who revoked holds %s", l2.Path(), la.Path())
	}
	require.NoError(t, asker.release())
	g2.wait(t, 10*time.Second, "G2 after the one who revoked")
	require.NoError(t, g2.release())
}

// TestRevokeSeenAcrossLocalHandoff checks lock.WithLocalHandoff's
// "Once a revoke request has been seen on the node (WithRevocable: a grant's
// Revoked closed, and Revoked was called, which starts the watch), the node
// is not passed on in the process any more: the next release deletes it, so
// that whoever asked gets the lock after the holders queued before it", and
// WithRevocable's "Revoke ... the holder's Lease.Revoked channel closes".
// G1 holds through a revocable handoff handle, G2 waits in the process, B
// (another session) queues and revokes G1's node.
//   - "seen": G1 called Revoked before the revoke; it closes; G1 releases:
//     G2 must not be handed the node, B enters next.
//   - "unseen": nobody called Revoked; G1 releases and may hand the node to
//     G2 (allowed); G2's lease carries a node whose data is "__REVOKE__":
//     G2's Revoked, called after its grant, must close (else the request is
//     lost), and once G2 releases B enters.
func TestRevokeSeenAcrossLocalHandoff(t *testing.T) {
	forEach(t, []string{"seen", "unseen"}, func(t *testing.T, f *fixture, name string) {
		seen := name == "seen"
		ctx := ctxT(t, 25*time.Second)
		path := f.Path("revoke/lock")
		bys := f.Raw()
		mA, _ := mutex.New(f.Session(), path, lock.WithLocalHandoff(5, 0), lock.WithRevocable())
		sB := f.Session()
		mB, _ := mutex.New(sB, path, lock.WithRevocable())
		g1, l1, b, g2 := handoffBehind(t, f, ctx, mA, mB, path)
		if seen {
			rev1 := l1.Revoked()
			require.NoError(t, lock.Revoke(ctx, sB, l1.Path()), "revoke")
			recv(t, rev1, 5*time.Second, "G1's Revoked never closed")
		} else {
			require.NoError(t, lock.Revoke(ctx, sB, l1.Path()), "revoke")
			waitFor(t, 5*time.Second, "the revoke mark on the node", func() bool {
				d, _, err := bys.Get(l1.Path())
				return err == nil && string(d) == "__REVOKE__"
			})
		}
		require.NoError(t, g1.release())
		select {
		case l2 := <-g2.got:
			if seen {
				t.Fatalf("G2 handed the node after a seen revoke; nodes %v", children(bys, path))
			}
			t.Logf("G2 granted on %s (G1's %s)", l2.Path(), l1.Path())
			if l2.Path() == l1.Path() {
				recv(t, l2.Revoked(), 3*time.Second, "G2 holds the revoked node and its Revoked never closes: the revoke request is lost")
			}
			require.NoError(t, g2.release())
			b.wait(t, 10*time.Second, "B")
		case <-b.got:
			t.Logf("B entered after G1")
			require.NoError(t, b.release())
			g2.wait(t, 10*time.Second, "G2")
			require.NoError(t, g2.release())
			return
		case <-time.After(10 * time.Second):
			t.Fatalf("neither G2 nor B entered; nodes %v", children(bys, path))
		}
	})
}

// TestFenceGrowsAcrossHandoffsAndSessions checks conn.Fence's "grows
// strictly with every grant of a lock, in every configuration, grants
// passed between goroutines of one process without ZooKeeper (the
// recipes' in-process handoff, WithLocalHandoff) included": goroutines of
// two sessions, on handles with and without local handoff (and labels,
// which a handoff keeps), take the lock in turn; each writes its Fence to
// the store while it holds. No holder's write may be refused.
func TestFenceGrowsAcrossHandoffsAndSessions(t *testing.T) {
	f := newFixture(t)
	for _, recipe := range []string{"mutex", "semaphoremutex"} {
		t.Run(recipe, func(t *testing.T) {
			f := f.In(t)
			ss := []*conn.Session{f.Session(), f.Session()}
			path := f.Path("fence-" + recipe)
			ctx := ctxT(t, 90*time.Second)
			var st fenceStore
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := 0; g < 6; g++ {
				kind := recipe + "-handoff"
				if g == 5 {
					kind = recipe // a plain handle beside the handoff ones
				}
				lk := newLocker(t, kind, ss[g%2], path, g)
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					lctx := lock.WithLabel(ctx, fmt.Sprintf("g%d", g))
					for i := 0; i < 8; i++ {
						l, err := lk.Acquire(lctx)
						if err != nil {
							errs <- fmt.Errorf("g%d acquire: %w", g, err)
							return
						}
						fe, err := l.Fence(ctx)
						if err != nil {
							errs <- fmt.Errorf("g%d fence: %w", g, err)
						} else {
							st.write(fmt.Sprintf("g%d#%d", g, i), fe)
						}
						if err := lk.Release(ctx); err != nil {
							errs <- fmt.Errorf("g%d release: %w", g, err)
							return
						}
					}
				}(g)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			t.Logf("%d grants fenced (%d by local handoff), greatest %v", st.n, st.passes, st.max)
			require.NotZero(t, st.passes, "no local handoff happened: the test proves nothing")
			require.Empty(t, st.refused, "grants whose Fence was not above the greatest seen")
			require.Equal(t, 48, st.n)
		})
	}
}

// TestFenceDowngradeThenNewReaderAndWriter: a write grant, a downgrade
// (twice: release the read and downgrade again) and, after the write
// release, a writer of another session: each grant's Fence is above the
// one before, as a store that fences writes needs.
func TestFenceDowngradeThenNewReaderAndWriter(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	path := f.Path("fence-rw")
	var st fenceStore
	rwA := newRW(t, f.Session(), path)
	wA, r1 := downgrade(t, ctx, rwA)
	st.write("write", fenceOf(t, ctx, wA))
	st.write("downgrade 1", fenceOf(t, ctx, r1))
	require.NoError(t, rwA.ReadLock().Release(ctx))
	r2, err := rwA.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	f2 := fenceOf(t, ctx, r2)
	st.write("downgrade 2", f2)
	hb := hold(ctx, newRW(t, f.Session(), path).WriteLock())
	hb.notGranted(t, 300*time.Millisecond, "B granted while A holds")
	require.NoError(t, rwA.WriteLock().Release(ctx))
	// A still reads; its read fence stays
	require.Equal(t, 0, fenceOf(t, ctx, r2).Compare(f2), "the read grant's Fence stays after the write release")
	require.NoError(t, rwA.ReadLock().Release(ctx))
	lb := hb.wait(t, 10*time.Second, "B")
	st.write("B's write", fenceOf(t, ctx, lb))
	require.Empty(t, st.refused)
	require.Equal(t, 4, st.n)
	require.NoError(t, hb.release())
}

// TestLocalHandoffAfterExpiryGrantsNewNode: A holds a local-handoff lock
// (with a label), B of the same session queues in the process; the server
// expires the session. WithLocalHandoff's "It is not passed on once its
// epoch ended": B's grant is on a new node of the new epoch, labelled by
// B's acquire, with a Fence above A's, and its guarded write commits.
func TestLocalHandoffAfterExpiryGrantsNewNode(t *testing.T) {
	f := newFixture(t)
	for _, recipe := range []string{"mutex-handoff", "semaphoremutex-handoff"} {
		t.Run(recipe, func(t *testing.T) {
			f := f.In(t)
			ctx := ctxT(t, 40*time.Second)
			s := f.Session()
			path := f.Path("exp-" + recipe)
			a := newLocker(t, recipe, s, path, 0)
			b := newLocker(t, recipe, s, path, 1)
			la, err := a.Acquire(lock.WithLabel(ctx, "a"))
			require.NoError(t, err)
			fa := fenceOf(t, ctx, la)
			hb := hold(lock.WithLabel(ctx, "b"), b)
			hb.notGranted(t, 200*time.Millisecond, "b granted while a holds")
			f.Expire(ctx, la.Epoch())
			recv(t, la.Lost(), 10*time.Second, "a's lease not lost after expiry")
			require.NoError(t, a.Release(ctx))
			lb := hb.wait(t, 15*time.Second, "b")
			fb := fenceOf(t, ctx, lb)
			t.Logf("a %v, b %v", fa, fb)
			require.Equal(t, 1, fb.Compare(fa), "b's fence above a's")
			require.NotEqual(t, fa.Zxid, fb.Zxid, "b's grant is on a node of the new epoch")
			require.Zero(t, fb.Pass)
			require.Contains(t, string(f.Data(lb.Path())), `"label":"b"`, "b's node")
			require.NoError(t, guardedCreate(ctx, lb, path+"-written"))
			require.NoError(t, hb.release())
		})
	}
}

// TestLocalHandoffBoundsARemoteWaiter: lock.WithLocalHandoff: "another
// process's contender waits for at most maxPasses+1 of these holds", for
// mutex and semaphoremutex. Four goroutines of session A loop over take and
// release (maxPasses 2); session B queues once: B must be granted within
// maxPasses+1 of A's grants begun after B queued, and fences grow in order.
func TestLocalHandoffBoundsARemoteWaiter(t *testing.T) {
	newFixture(t).Each(t, []string{"mutex", "semaphoremutex"}, func(t *testing.T, f *fixture, recipe string) {
		const maxPasses = 2
		ctx := ctxT(t, 60*time.Second)
		sA := f.Session()
		path := f.Path("bound-" + recipe)
		var handles []locker
		for i := 0; i < 4; i++ {
			if recipe == "mutex" && i > 0 {
				handles = append(handles, handles[0])
				continue
			}
			var lk locker
			var err error
			if recipe == "mutex" {
				lk, err = mutex.New(sA, path, lock.WithLocalHandoff(maxPasses, 0))
			} else {
				lk, err = semaphoremutex.New(sA, path, lock.WithLocalHandoff(maxPasses, 0))
			}
			require.NoError(t, err)
			handles = append(handles, lk)
		}
		var mu sync.Mutex
		var grants []string // "A" or "B" in grant order
		var fences []conn.Fence
		var bQueued = -1 // len(grants) when B's node appeared
		granted := func(who string, l *conn.Lease) {
			fe, err := l.Fence(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: fence: %v", who, err)
				return
			}
			grants = append(grants, who)
			fences = append(fences, fe)
		}
		stop := make(chan struct{})
		wg := spawn(4, func(i int) {
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := handles[i].Acquire(ctx)
				if err != nil {
					t.Errorf("A%d: %v", i, err)
					return
				}
				granted("A", l)
				time.Sleep(2 * time.Millisecond)
				if err := handles[i].Release(ctx); err != nil {
					t.Errorf("A%d release: %v", i, err)
					return
				}
			}
		})
		time.Sleep(300 * time.Millisecond)
		b := newLocker(t, recipe, f.Session(), path, 9)
		bh := hold(ctx, b)
		waitFor(t, 10*time.Second, "B's node", func() bool {
			n := len(children(f.Raw(), path))
			if recipe == "semaphoremutex" {
				n = len(children(f.Raw(), path+"/locks"))
			}
			if n >= 2 {
				mu.Lock()
				if bQueued < 0 {
					bQueued = len(grants)
				}
				mu.Unlock()
				return true
			}
			return false
		})
		bl := bh.wait(t, 20*time.Second, "B")
		granted("B", bl)
		require.NoError(t, bh.release())
		close(stop)
		require.True(t, doneWithin(wg, 20*time.Second), "A's goroutines did not stop")
		mu.Lock()
		defer mu.Unlock()
		after := 0
		for i := bQueued; i < len(grants) && grants[i] != "B"; i++ {
			after++
		}
		t.Logf("A's grants after B queued, before B's grant: %d (grants in all %d)", after, len(grants))
		if after > maxPasses+1 {
			t.Errorf("B waited through %d of A's grants that began after it queued, want at most maxPasses+1 = %d", after, maxPasses+1)
		}
		for i := 1; i < len(fences); i++ {
			if fences[i].Compare(fences[i-1]) <= 0 {
				t.Errorf("grant %d (%s) fence %v not after grant %d (%s) fence %v", i, grants[i], fences[i], i-1, grants[i-1], fences[i-1])
			}
		}
	})
}

// TestRevokeAfterLocalHandoffReachesOnlyTheCurrentHolder: with
// lock.WithLocalHandoff and lock.WithRevocable "a revoke request closes
// Revoked of the current local holder only" (CHANGELOG), Revoked "closed
// when someone asked the holder to release", and metrics' LockRevokeRequest
// is one per request; a semaphore mutex's holds, losses and local handoffs
// are reported as "semaphore", its waits as "semaphoremutex". G1
// (revocable handoff handle, metered session A) holds and has called
// Revoked, G2 (another such handle of A) waits in the process, B (session
// of its own) queues. G1 releases: G2 is handed the node; it calls Revoked
// and B revokes the node. G2's Revoked must close, G1's (released) must
// not, before or after A's session then expires; B enters after the
// expiry; the metrics tell two granted waits, one handoff, one hold, one
// revoke request and one loss (expiry), and the watches gauge drains.
func TestRevokeAfterLocalHandoffReachesOnlyTheCurrentHolder(t *testing.T) {
	forEach(t, []string{"mutex", "semaphoremutex"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 40*time.Second)
		path := f.Path("revho/lock")
		rec, sA := f.metered()
		mk := func(s *conn.Session, opts ...lock.Option) locker {
			if recipe == "mutex" {
				m, _ := mutex.New(s, path, opts...)
				return m
			}
			m, _ := semaphoremutex.New(s, path, opts...)
			return m
		}
		sB := f.Session()
		g1 := hold(ctx, mk(sA, lock.WithLocalHandoff(5, 0), lock.WithRevocable()))
		l1 := g1.wait(t, 10*time.Second, "G1")
		g2 := hold(ctx, mk(sA, lock.WithLocalHandoff(5, 0), lock.WithRevocable()))
		b := hold(ctx, mk(sB, lock.WithRevocable())) // queued after G2 asked
		waitFor(t, 10*time.Second, "B queued", func() bool { return countNodes(f.Raw(), path) >= 2 })
		require.Equal(t, 2, countNodes(f.Raw(), path), "G2 queued a node of its own: %v", nodes{f.Raw(), path})
		rev1 := l1.Revoked()
		require.NoError(t, g1.release())
		l2 := g2.wait(t, 10*time.Second, "G2")
		require.Equal(t, l1.Path(), l2.Path(), "G2 was not handed G1's node (B queued behind it)")
		rev2 := l2.Revoked()
		require.NoError(t, lock.Revoke(ctx, sB, l2.Path()), "revoke")
		recv(t, rev2, 5*time.Second, "the current holder G2's Revoked never closed")
		quiet(t, rev1, time.Second, "the released G1's Revoked closed on a revoke of G2's grant")
		f.Expire(ctx, l2.Epoch())
		recv(t, l2.Lost(), 10*time.Second, "G2's Lost not closed after the expiry")
		b.wait(t, 10*time.Second, "B after A's expiry")
		quiet(t, rev1, 500*time.Millisecond, "the released G1's Revoked closed after the expiry")
		require.NoError(t, g2.release(), "release after a loss")
		require.NoError(t, b.release())
		held := map[string]string{"mutex": "mutex", "semaphoremutex": "semaphore"}[recipe]
		rec.expect(t, 2, metrics.LockWait, recipe, metrics.OutcomeGranted, "granted waits")
		rec.expect(t, 1, metrics.LockHandoff, held, "", "handoffs")
		rec.expect(t, 1, metrics.LockHold, held, "", "holds (G1's, ended by the handoff)")
		rec.expect(t, 1, metrics.LockRevokeRequest, held, "", "revoke requests")
		rec.expect(t, 1, metrics.LockLost, held, metrics.CauseExpiry, "losses by expiry")
		rec.expect(t, 2, metrics.LockWait, "", "", "waits (of any recipe name)")
		rec.expect(t, 1, metrics.LockLost, "", "", "losses (of any recipe name)")
		rec.gaugeDrains(t, 3*time.Second)
	})
}

// TestRevokeAfterServerRestartEndsLocalHandoff: a session survives a
// server restart within its timeout, holders "keep their locks", Revoked
// closes "when someone asked the holder to release", a revoke request seen
// ends the handoff in the process, and the watches gauge counts "the
// watches the session has on the servers". G1 (revocable handoff handle,
// metered session A) holds with Lost and Revoked armed, G2 waits in the
// process, B (another session) queues. The server is killed and restarted:
// both sessions survive, G1 still holds, and the gauge equals the server's
// count. B then revokes G1's node: G1's Revoked must close, and after G1's
// release B must enter before G2.
func TestRevokeAfterServerRestartEndsLocalHandoff(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	path := f.Path("rstrev/lock")
	long := conn.WithSessionTimeout(20 * time.Second)
	rec, sA := f.metered(long)
	sB := f.Session(long)
	mA, _ := mutex.New(sA, path, lock.WithLocalHandoff(5, 0), lock.WithRevocable())
	mB, _ := mutex.New(sB, path, lock.WithRevocable())
	g1, l1, b, g2 := handoffBehind(t, f, ctx, mA, mB, path)
	lost1, rev1 := l1.Lost(), l1.Revoked()
	sid := l1.Epoch().SessionID()
	require.NoError(t, f.Kill(0))
	require.NoError(t, f.Restart(0))
	for name, s := range map[string]*conn.Session{"A": sA, "B": sB} {
		waitFor(t, 20*time.Second, name+" reconnected", func() bool { return s.State() == conn.Reconnected })
	}
	require.Equal(t, sid, epochOf(t, sA).SessionID(), "A's session survived the restart")
	quiet(t, lost1, 500*time.Millisecond, "G1's Lost closed although its session survived")
	if !eventually(5*time.Second, func() bool { return int(rec.watches.Load()) == len(sessionWatches(t, f, 0, sid)) }) {
		t.Errorf("after the restart: gauge %d, the server lists for A %v", rec.watches.Load(), sessionWatches(t, f, 0, sid))
	}
	require.NoError(t, lock.Revoke(ctx, sB, l1.Path()), "revoke after the restart")
	recv(t, rev1, 5*time.Second, "G1's Revoked not closed by a revoke after the restart")
	require.NoError(t, g1.release())
	askerFirst(t, b, g2)
	rec.gaugeDrains(t, 3*time.Second)
}

// TestRevokeDuringOutageSeenAfterReconnect: Revoked closes "when someone
// asked the holder to release"; holders keep their locks while Suspended;
// a revoke seen ends the handoff in the process. G1 (revocable handoff
// handle, session A through a proxy) holds with Revoked armed, G2 waits in
// the process, B (another session, direct) queues. A's connection is cut
// and blackholed; B revokes G1's node during the outage; the proxy heals
// and A reconnects to the same session. G1's Revoked must close, G1's
// Lost stay open, and after G1's release B must enter before G2; the
// watches gauge ends at 0.
func TestRevokeDuringOutageSeenAfterReconnect(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	path := f.Path("outrev/lock")
	rec := &metricsRec{}
	px, sA := f.ProxiedSession(conn.WithSessionTimeout(20*time.Second), conn.WithMetrics(rec.Hooks()))
	sB := f.Session()
	mA, _ := mutex.New(sA, path, lock.WithLocalHandoff(5, 0), lock.WithRevocable())
	mB, _ := mutex.New(sB, path, lock.WithRevocable())
	g1, l1, b, g2 := handoffBehind(t, f, ctx, mA, mB, path)
	rev1, lost1 := l1.Revoked(), l1.Lost()
	suspend(t, px, sA)
	require.NoError(t, lock.Revoke(ctx, sB, l1.Path()), "revoke during A's outage")
	px.Heal()
	waitFor(t, 20*time.Second, "A reconnected", func() bool { return sA.State() == conn.Reconnected })
	recv(t, rev1, 5*time.Second, "G1's Revoked not closed after the reconnect (the revoke came during the outage)")
	quiet(t, lost1, 200*time.Millisecond, "G1's Lost closed although its session survived")
	require.NoError(t, g1.release())
	askerFirst(t, b, g2)
	rec.gaugeDrains(t, 3*time.Second)
}

// TestLocalHandoffReleaseKeepsDeadlineWhileGuardedWriteInFlight: README,
// "Acquire / Release: every lock has them; ctx bounds the wait", and
// lock.ErrReleasePending: a release whose delete cannot be confirmed
// "counts as released". Under WithLocalHandoff "a release first waits for
// the grant's guarded writes in flight" (docs/design.md). G1 holds through
// a handle of a proxied session (20 s timeout), G2 waits behind; the proxy
// is blackholed and another goroutine's GuardedWrite through G1's lease
// (ctx 20 s) is in flight. G1's Release with a 1 s deadline must return
// within 1.1 s; G2 must not be granted while the write is unanswered;
// after the heal G2 gets the lock and its guarded write commits. With or
// without WithLocalHandoff, Release returns ErrReleasePending at 1.0 s;
// with it, the handoff is finished once the write is answered.
func TestLocalHandoffReleaseKeepsDeadlineWhileGuardedWriteInFlight(t *testing.T) {
	forEach(t, []string{"mutex-handoff", "semaphoremutex-handoff", "mutex", "semaphoremutex"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 60*time.Second)
		res := f.Path("gwbh-res")
		f.Register(res, nil)
		px, s := f.ProxiedSession(conn.WithSessionTimeout(20 * time.Second))
		path := f.Path("gwbh")
		lk := newLocker(t, recipe, s, path, 0)
		l1, err := lk.Acquire(ctx)
		require.NoError(t, err)
		g2 := hold(ctx, lk)
		px.Blackhole()
		written := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			written <- guardedSet(wctx, l1, res, []byte("g1"), -1)
		}()
		quiet(t, written, 200*time.Millisecond, "the guarded write returned while blackholed")
		d, relErr := timed(ctx, time.Second, lk.Release)
		t.Logf("G1's Release while its guarded write is in flight: %v after %v", relErr, d)
		if d > 1100*time.Millisecond {
			t.Errorf("Release took %v with a 1 s deadline", d)
		}
		if l2, ok := g2.granted(t, 200*time.Millisecond, "G2"); ok {
			select {
			case err := <-written:
				t.Logf("write answered: %v", err)
			default:
				t.Errorf("G2 was granted %s while G1's guarded write was still in flight", l2.Path())
			}
		}
		px.Heal()
		wErr := recv(t, written, 25*time.Second, "the guarded write never returned")
		t.Logf("G1's guarded write after the heal: %v", wErr)
		if relErr != nil && !errors.Is(relErr, lock.ErrReleasePending) {
			require.NoError(t, lk.Release(ctx), "Release again after a failed one")
		}
		l2 := g2.wait(t, 15*time.Second, "G2 after the heal")
		_, err = l2.GuardedWrite(ctx)
		require.NoError(t, err, "G2's guarded write")
		require.NoError(t, g2.release())
	})
}

// releaseWaitingForWrite: G1 holds the lock of recipe at path through a
// proxied session (20 s timeout), the proxy is blackholed, a GuardedWrite
// through G1's lease is in flight (written) and G1's Release (ctx without
// deadline) waits for it (released).
func releaseWaitingForWrite(t *testing.T, f *fixture, ctx context.Context, recipe, path string) (px *zktest.Proxy, s *conn.Session, l1 *conn.Lease, written, released chan error) {
	t.Helper()
	res := path + "-res"
	f.Register(res, nil)
	px, s = f.ProxiedSession(conn.WithSessionTimeout(20 * time.Second))
	g1 := hold(ctx, newLocker(t, recipe, s, path, 0))
	l1 = g1.wait(t, 10*time.Second, "G1")
	px.Blackhole()
	written, released = make(chan error, 1), make(chan error, 1)
	go func() { written <- guardedSet(ctx, l1, res, []byte("g1"), -1) }()
	quiet(t, written, 200*time.Millisecond, "the guarded write returned while blackholed")
	go func() { released <- g1.release() }()
	quiet(t, released, 300*time.Millisecond, "G1's Release returned while its guarded write was unanswered")
	return px, s, l1, written, released
}

// TestLocalWaitersKeepDeadlinesWhileReleaseWaitsForGuardedWrite: lock's
// contract, Acquire "returns at most 100 ms after ctx ends", TryAcquire
// "never waits". As above (WithLocalHandoff, proxied session blackholed,
// a GuardedWrite through G1's lease in flight): while G1's Release waits
// for that write, a local waiter's Acquire with a 500 ms deadline, a
// TryAcquire with one of 500 ms, and a GuardedWrite with one of 500 ms
// through the grant being released, must each return within 600 ms.
func TestLocalWaitersKeepDeadlinesWhileReleaseWaitsForGuardedWrite(t *testing.T) {
	forEach(t, []string{"mutex-handoff", "semaphoremutex-handoff"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 60*time.Second)
		path := f.Path("gwbhw")
		px, s, l1, _, released := releaseWaitingForWrite(t, f, ctx, recipe, path)
		other := newLocker(t, recipe, s, path, 1)
		for name, call := range map[string]func(context.Context) error{
			"Acquire":    acquireErr(other),
			"TryAcquire": tryErr(other.(tryAcquirer)),
			"GuardedWrite through the grant being released": func(ctx context.Context) error {
				return guardedSet(ctx, l1, path+"-res", []byte("again"), -1)
			},
		} {
			d, err := timed(ctx, 500*time.Millisecond, call)
			t.Logf("%s while G1's release waits: %v after %v", name, err, d)
			if d > 600*time.Millisecond {
				t.Errorf("%s took %v with a 500 ms deadline", name, d)
			}
		}
		px.Heal()
		recv(t, released, 25*time.Second, "G1's Release never returned")
	})
}

// TestLocalHandoffGuardedWriteGivenUpStillPrecedesNextGrant: under
// WithLocalHandoff "a release first waits for the grant's guarded writes in
// flight, so that none reaches the server after the next grant exists"
// (docs/design.md, "In-process handoff"), and "Every grant is a lease of
// its own: released, it refuses guarded writes". G1 holds through a
// handoff handle of a proxied session with 400 ms of latency each way, G2
// waits in the process. A GuardedWrite through G1's lease with a 50 ms ctx
// gives up (context deadline exceeded, not ErrConnectionLoss) while its
// multi is still in the proxy's delay; G1 releases and G2 is handed the
// same node only once the server has answered the multi: G1's write,
// given up by its caller, is never applied while G2 holds. (Without local
// handoff the release's own request follows the multi on the same
// connection, so the server applies the write before the next grant.)
func TestLocalHandoffGuardedWriteGivenUpStillPrecedesNextGrant(t *testing.T) {
	forEach(t, []string{"mutex-handoff", "semaphoremutex-handoff"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 30*time.Second)
		res := f.Path("gwgave-res")
		f.Register(res, []byte("none"))
		px, s := f.ProxiedSession(conn.WithSessionTimeout(20 * time.Second))
		path := f.Path("gwgave")
		g1 := hold(ctx, newLocker(t, recipe, s, path, 0))
		l1 := g1.wait(t, 10*time.Second, "G1")
		g2 := hold(ctx, newLocker(t, recipe, s, path, 1))
		px.SetLatency(400 * time.Millisecond)
		d, err := timed(ctx, 50*time.Millisecond, func(ctx context.Context) error { return guardedSet(ctx, l1, res, []byte("g1"), -1) })
		t.Logf("G1's guarded write gave up: %v after %v", err, d)
		require.Error(t, err, "the write was answered within 50 ms through 400 ms of latency")
		relStart := time.Now()
		require.NoError(t, g1.release())
		l2 := g2.wait(t, 10*time.Second, "G2")
		atGrant := string(f.Data(res))
		t.Logf("G2 granted %v after G1's release began, on %s (G1's %s); the resource then: %q", time.Since(relStart), l2.Path(), l1.Path(), atGrant)
		px.SetLatency(0)
		if !eventually(3*time.Second, func() bool { return string(f.Data(res)) != atGrant }) {
			t.Logf("the resource stayed %q", atGrant)
			require.NoError(t, g2.release())
			return
		}
		_, gwErr := l2.GuardedWrite(ctx)
		t.Errorf("G1's guarded write, given up before its release, committed %q after G2 was granted (resource %q at G2's grant); G2 still holds (its GuardedWrite: %v)", f.Data(res), atGrant, gwErr)
		require.NoError(t, g2.release())
	})
}

// TestCloseWhileReleaseWaitsForGuardedWrite: Session.Close "returns at once
// when the server answers or the connection is down, else after about a
// second (13 s at worst ...)", and every call after Close fails with
// ErrClosed. As in the deadline test above (WithLocalHandoff, proxied session
// blackholed, a GuardedWrite through G1's lease in flight, G1's Release
// waiting for it): Close must return within 2 s, and the waiting Release
// and the write must return within 2 s of it.
func TestCloseWhileReleaseWaitsForGuardedWrite(t *testing.T) {
	forEach(t, []string{"mutex-handoff", "semaphoremutex-handoff"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 60*time.Second)
		px, s, _, written, released := releaseWaitingForWrite(t, f, ctx, recipe, f.Path("gwclose"))
		d, err := timed(ctx, 10*time.Second, func(context.Context) error { return s.Close() })
		t.Logf("Close: %v after %v", err, d)
		if d > 2*time.Second {
			t.Errorf("Close took %v", d)
		}
		t.Logf("Release after Close: %v", recv(t, released, 2*time.Second, "G1's Release still waiting 2 s after Close"))
		t.Logf("GuardedWrite after Close: %v", recv(t, written, 2*time.Second, "the guarded write still waiting 2 s after Close"))
		px.Heal()
	})
}
