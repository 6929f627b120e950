package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// TestExpiryMidDrainMetrics: B holds the lock; four goroutines of
// session A wait (each with its own handle); A's ZooKeeper session is
// expired by the server (zktest.ExpireEpoch) while they wait, so, as package
// lock says, "A session lost while waiting is not an error: Acquire starts
// over in the next one". B releases, and A's goroutines are granted one
// after the other, each watching its lease's Lost, and release.
//
// Checked: never two of them holding at once (docs/safety.md guarantee 1);
// every Acquire granted; metrics.LockWait "One per call" with
// outcome granted (4 of them, nothing else); the watches gauge back to 0
// ("It rises with the waiters and comes back down as they are granted or
// give up; a count that only grows is watches left behind"); and no watch
// of A's session left on the server (guarantee 2).
func TestExpiryMidDrainMetrics(t *testing.T) {
	recipes := []string{"mutex", "mutex-handoff", "semaphoremutex", "semaphoremutex-handoff", "rwlock", "exclusive", "leader"}
	forEach(t, recipes, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 60*time.Second)
		rec := &metricsRec{}
		sa := f.Session(conn.WithMetrics(rec.Hooks()))
		path := f.Path("r3-exp/") + recipe
		bh := hold(ctx, newLocker(t, recipe, f.Session(), path, 100))
		bh.wait(t, 60*time.Second, "bh")
		const n = 4
		var occ occupancy
		var granted atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			lk := newLocker(t, recipe, sa, path, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := lk.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				granted.Add(1)
				occ.enter()
				if _, ok := within(l.Lost(), 50*time.Millisecond); ok {
					errs <- fmt.Errorf("lease lost while held: %v", l.Err())
				}
				occ.leave()
				if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
					errs <- fmt.Errorf("release: %w", err)
				}
			}()
		}
		waitFor(t, 10*time.Second, "A's waiters watching", func() bool { return rec.watches.Load() >= 1 })
		time.Sleep(200 * time.Millisecond) // not a race fix: give every waiter time to queue before the expiry
		ep := epochOf(t, sa)
		f.Expire(ctx, ep)
		recv(t, ep.Done(), 10*time.Second, "epoch not ended")
		ep2 := epochOf(t, sa)
		waitFor(t, 10*time.Second, "A's waiters watching again", func() bool {
			return len(sessionWatches(t, f, 0, epochOf(t, sa).SessionID())) >= 1
		})
		time.Sleep(200 * time.Millisecond) // not a race fix: let the waiters queue again before the handoff
		require.NoError(t, bh.release())
		if !doneWithin(&wg, 30*time.Second) {
			t.Fatalf("A's waiters not all granted: %d of %d; nodes %v", granted.Load(), n, children(f.Raw(), path))
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if m := occ.peak.Load(); m > 1 {
			t.Errorf("%d of A's goroutines held at once", m)
		}
		rec.expect(t, n, metrics.LockWait, "", metrics.OutcomeGranted, "waits granted")
		rec.expect(t, n, metrics.LockWait, "", "", "waits reported, one per call,")
		rec.gaugeDrains(t, 3*time.Second)
		noWatchesOf(t, f, ep2.SessionID(), 3*time.Second, "A's session")
	})
}

// TestInterleavedDrainMassCancelBystander attacks CHANGELOG's
// "Draining one session's waiters after plain deletes ... A woken waiter now
// decides from its session's latest listing less the nodes the session knows
// have left": 45 waiters of three sessions, interleaved in one queue (A, B,
// C, A, ...), each its own handle, behind a holder of a fourth session, on
// recipes whose releases are plain deletes (revocable mutex and write lock,
// leader's Resign) and on the sealed mutex. At once: a third of them cancel,
// a bystander deletes a sixth of the nodes, the holder releases. Checked:
//   - lock's "Acquire blocks until the lock is held or ctx ends; one whose ctx
//     ends first returns an error matching ctx.Err()": every cancelled waiter
//     fails with context.Canceled, none is granted, and every other returns;
//   - mutual exclusion (docs/safety.md guarantee 1): no surviving grant while
//     another survivor holds (a waiter whose node the bystander deleted is
//     excused, as "Deleting a holder's node lets the next waiter in"; for the
//     leader, which queues again, it is not);
//   - FIFO (mutex: "contenders are granted in the order their nodes were
//     created"; leader: "Participants become leader in the order they
//     campaigned"): survivors granted in the order of their nodes;
//   - nothing left: no node under the path, no watch of the three sessions.
//
// Rounds 0 and 1 cancel and delete before the release; round 2 does all
// three at the same time (a cancelled waiter may then be granted, and is
// then a holder like any other).
func TestInterleavedDrainMassCancelBystander(t *testing.T) {
	forEach(t, []string{"mutex-revocable", "leader", "rwlock-revocable", "mutex"}, func(t *testing.T, f *fixture, recipe string) {
		ss := []*conn.Session{f.Session(), f.Session(), f.Session()}
		hs := f.Session()
		for round := 0; round < 3; round++ {
			path := fmt.Sprintf("%s/r4-drain/%s-%d", f.Root(), recipe, round)
			ws := runDrain(t, f, recipe, path, ss, hs, 45, int64(round+1), round == 2)
			var surv []*drainWaiter
			for i, w := range ws {
				switch w.fate {
				case "cancelled":
					if round == 2 {
						// cancelled while the release ran: granted or ctx's error
						if w.lease == nil && !errors.Is(w.err, context.Canceled) {
							t.Errorf("round %d waiter %d (%s) cancelled: err %v", round, i, w.node, w.err)
						}
					} else if w.lease != nil || !errors.Is(w.err, context.Canceled) {
						t.Errorf("round %d waiter %d (%s) cancelled before the release: lease %v err %v", round, i, w.node, w.lease != nil, w.err)
					}
				case "survivor":
					if w.err != nil || w.lease == nil {
						t.Errorf("round %d waiter %d (%s) survivor: err %v", round, i, w.node, w.err)
						continue
					}
					surv = append(surv, w)
				case "deleted":
					if recipe == "leader" && (w.err != nil || w.lease == nil) {
						t.Errorf("round %d waiter %d (%s) deleted, must lead later: err %v", round, i, w.node, w.err)
					}
				}
				if w.overlap != "" && !(w.fate == "deleted" && recipe != "leader") {
					t.Errorf("round %d: two holders: %s (%s) granted while %sheld", round, w.node, w.fate, w.overlap)
				}
			}
			byGrant := append([]*drainWaiter(nil), surv...)
			sort.Slice(byGrant, func(i, j int) bool { return byGrant[i].grantIdx < byGrant[j].grantIdx })
			for i := range surv {
				if surv[i] != byGrant[i] {
					var a, b []string
					for j := range surv {
						a = append(a, surv[j].node[strings.LastIndexByte(surv[j].node, '-')+1:])
						b = append(b, byGrant[j].node[strings.LastIndexByte(byGrant[j].node, '-')+1:])
					}
					t.Errorf("round %d: survivors not granted FIFO:\nqueued  %v\ngranted %v", round, a, b)
					break
				}
			}
			waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(f.Raw(), path)) == 0 })
			for i, s := range ss {
				noWatchesLeft(t, f, s, 5*time.Second, fmt.Sprintf("round %d: session %d", round, i))
			}
		}
	})
}

// TestOneAttemptDrainUnderCuts attacks the drain of one session's
// waiters after plain deletes (CHANGELOG) with conn.WithRetry's
// maxAttempts 1 and lost answers: session A (through a proxy, one attempt
// per request) and session B queue 24 waiters interleaved behind a holder
// of session D; revocable mutex and leader (plain deletes). While the queue
// drains, new A acquires keep coming, and the proxy loses the answer of one
// of A's next few requests (BlackholeAfterWrites) and heals once it fired,
// five times. Checked:
//   - never two holders (docs/safety.md guarantee 1; no session ends here);
//   - every Acquire returns (lock: "Acquire blocks until the lock is held or
//     ctx ends"), every B waiter is granted;
//   - lock.ErrCreatePending and cancelled acquires leave nothing: "its node is
//     never left in the queue for the life of the session": once all have
//     returned and released, no node is left under the path, and neither A
//     nor B keeps a watch on the server.
func TestOneAttemptDrainUnderCuts(t *testing.T) {
	forEach(t, []string{"mutex-revocable", "leader"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 120*time.Second)
		px, sa := f.ProxiedSession(oneAttempt(50 * time.Millisecond))
		sb := f.Session()
		zc := f.Raw()
		path := f.Path("r4-one/") + recipe
		h := hold(ctx, newLocker(t, recipe, f.Session(), path, 999))
		h.wait(t, 60*time.Second, "h")
		var mu sync.Mutex
		holders := 0
		var overlaps []string
		var errsA []string
		var grantedB, grantedA, failedA atomic.Int32
		var wg sync.WaitGroup
		waiter := func(s *conn.Session, who string, i int, wctx context.Context) {
			defer wg.Done()
			lk := newLocker(t, recipe, s, path, i)
			l, err := lk.Acquire(wctx)
			if err != nil {
				mu.Lock()
				if who == "B" {
					overlaps = append(overlaps, fmt.Sprintf("B waiter %d failed: %v", i, err))
				} else {
					errsA = append(errsA, err.Error())
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Logf("A waiter %d: %v (ErrConnectionLoss %v, ErrCreatePending %v, ErrClosed %v)", i, err,
							errors.Is(err, conn.ErrConnectionLoss), errors.Is(err, lock.ErrCreatePending), errors.Is(err, conn.ErrClosed))
					}
				}
				mu.Unlock()
				failedA.Add(1)
				return
			}
			mu.Lock()
			holders++
			if holders > 1 {
				overlaps = append(overlaps, fmt.Sprintf("%s waiter %d granted %s while %d others hold", who, i, l.Path(), holders-1))
			}
			mu.Unlock()
			if who == "B" {
				grantedB.Add(1)
			} else {
				grantedA.Add(1)
			}
			within(l.Lost(), time.Millisecond)
			mu.Lock()
			holders--
			mu.Unlock()
			_ = lk.Release(context.WithoutCancel(ctx))
		}
		const n = 24
		nB := 0
		for i := 0; i < n; i++ {
			s, who := sa, "A"
			if i%2 == 1 {
				s, who = sb, "B"
				nB++
			}
			before := len(children(zc, path))
			wg.Add(1)
			go waiter(s, who, i, ctx)
			waitFor(t, 10*time.Second, "queued", func() bool { return len(children(zc, path)) > before })
		}
		// churn: new A acquires with short deadlines while the faults come
		stop := make(chan struct{})
		var churn sync.WaitGroup
		churn.Add(1)
		go func() {
			defer churn.Done()
			for i := 1000; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(40 * time.Millisecond):
				}
				wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				wg.Add(1)
				go func(i int) { defer cancel(); waiter(sa, "A", i, wctx) }(i)
			}
		}()
		require.NoError(t, h.release())
		rng := rand.New(rand.NewSource(4))
		for k := 0; k < 5; k++ {
			px.BlackholeAfterWrites(1 + rng.Intn(4))
			if !eventually(5*time.Second, px.Blackholed) {
				px.BlackholeAfterWrites(0)
				t.Logf("fault %d did not fire", k)
				continue
			}
			px.Heal()
			ep := epochOf(t, sa) // wait for the reconnect
			_ = ep
		}
		close(stop)
		churn.Wait()
		if !doneWithin(&wg, 60*time.Second) {
			t.Fatalf("acquires stuck: B granted %d of %d; nodes %v", grantedB.Load(), nB, sortedBySeq(zc, path))
		}
		mu.Lock()
		for _, o := range overlaps {
			t.Error(o)
		}
		kinds := map[string]int{}
		for _, e := range errsA {
			k := e
			if i := strings.LastIndex(e, ": "); i >= 0 {
				k = e[i+2:]
			}
			kinds[k]++
		}
		mu.Unlock()
		t.Logf("A granted %d, failed %d (%v); B granted %d of %d", grantedA.Load(), failedA.Load(), kinds, grantedB.Load(), nB)
		if !eventually(20*time.Second, func() bool { return len(children(zc, path)) == 0 }) {
			t.Errorf("nodes left after every acquire returned and released: %v", sortedBySeq(zc, path))
		}
		for name, s := range map[string]*conn.Session{"A": sa, "B": sb} {
			noWatchesLeft(t, f, s, 5*time.Second, "session "+name)
		}
	})
}
