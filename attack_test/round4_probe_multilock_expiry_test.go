package attack_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe4_MultiLockTwoSessionsExpiryMidAcquire: a MultiLock over mutex
// /a of session A and mutex /b of session B; C holds /b, so the MultiLock
// holds /a and waits for /b. Then one of the two sessions is expired by the
// server (zktest.ExpireEpoch) and C releases.
//   - A expired (the lock already taken): D takes /a meanwhile. Whatever
//     Acquire returns, the MultiLock must not report whole while D holds /a:
//     multilock's "Holding a MultiLock is holding every lease it returned
//     ... Lost closes when any of them is lost". Release must not leave it
//     busy ("Release after loss (Lost closed) returns nil"), and nothing of
//     A's or B's may remain (no node, no watch) and no goroutine.
//   - B expired (the lock being waited for): lock's "A session lost while
//     waiting is not an error: Acquire starts over in the next one"; the
//     MultiLock gets both, Lost stays open, and a GuardedWrite through each
//     lease commits.
func TestProbe4_MultiLockTwoSessionsExpiryMidAcquire(t *testing.T) {
	for _, which := range []string{"held-expires", "waiting-expires"} {
		t.Run(which, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 60*time.Second)
			zc := raw(t, c)
			sa := session(t, c.Servers())
			sb := session(t, c.Servers())
			sc := session(t, c.Servers())
			sd := session(t, c.Servers())
			pa, pb := c.Root()+"/r4-ml/a", c.Root()+"/r4-ml/b"
			ma, _ := mutex.New(sa, pa)
			mb, _ := mutex.New(sb, pb)
			mc, _ := mutex.New(sc, pb)
			md, _ := mutex.New(sd, pa)
			hc := gAcquire(ctx, mc)
			select {
			case <-hc.got:
			case err := <-hc.failed:
				t.Fatal(err)
			}
			g0 := runtime.NumGoroutine()
			ml, err := multilock.New(mb, ma)
			if err != nil {
				t.Fatal(err)
			}
			type res struct {
				leases []*conn.Lease
				err    error
			}
			got := make(chan res, 1)
			rel := make(chan chan error)
			go func() {
				ls, err := ml.Acquire(ctx)
				got <- res{ls, err}
				if err == nil {
					done := <-rel
					done <- ml.Release(context.WithoutCancel(ctx))
				}
			}()
			waitFor(t, 10*time.Second, "/a taken, /b queued", func() bool {
				return len(children(zc, pa)) == 1 && len(children(zc, pb)) == 2
			})
			victim := sa
			if which == "waiting-expires" {
				victim = sb
			}
			ep := epochOf(t, victim)
			if err := zktest.ExpireEpoch(ctx, c.Servers()[0], ep); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ep.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("epoch not ended")
			}
			var hd *gHolder
			if which == "held-expires" {
				hd = gAcquire(ctx, md)
				select {
				case <-hd.got:
				case err := <-hd.failed:
					t.Fatal(err)
				case <-time.After(10 * time.Second):
					t.Fatalf("D not granted /a after A's expiry: %v", children(zc, pa))
				}
			} else {
				// B's waiter queues again in its next epoch
				waitFor(t, 10*time.Second, "B queued again", func() bool { return len(children(zc, pb)) == 2 })
			}
			if err := hc.release(); err != nil {
				t.Fatal(err)
			}
			var r res
			select {
			case r = <-got:
			case <-time.After(20 * time.Second):
				t.Fatalf("MultiLock Acquire stuck; /a %v /b %v", children(zc, pa), children(zc, pb))
			}
			t.Logf("Acquire returned err=%v", r.err)
			if which == "held-expires" {
				if r.err == nil {
					select {
					case <-ml.Lost():
					case <-time.After(5 * time.Second):
						t.Fatalf("MultiLock returned leases and Lost stays open while D holds /a (lease a err %v)", r.leases[1].Err())
					}
					for _, l := range r.leases {
						if l.Path() == "" {
							t.Error("empty lease path")
						}
					}
					if _, err := r.leases[0].GuardedWrite(ctx, &zk.CreateRequest{Path: c.Root() + "/r4-ml/x", Data: nil, Flags: 0, Acl: zk.WorldACL(zk.PermAll)}); err == nil {
						// leases[0] is /a (path order): lost
						t.Error("guarded write through the lost /a lease committed")
					}
					done := make(chan error, 1)
					rel <- done
					if err := <-done; err != nil {
						t.Errorf("Release after loss: %v", err)
					}
				}
				if err := hd.release(); err != nil {
					t.Fatal(err)
				}
			} else {
				if r.err != nil {
					t.Fatalf("Acquire failed after B's expiry while waiting: %v", r.err)
				}
				select {
				case <-ml.Lost():
					t.Fatalf("Lost closed: %v %v", r.leases[0].Err(), r.leases[1].Err())
				default:
				}
				for i, l := range r.leases {
					if _, err := l.GuardedWrite(ctx, &zk.CheckVersionRequest{Path: l.Path(), Version: -1}); err != nil {
						t.Errorf("guarded write through lease %d: %v", i, err)
					}
				}
				done := make(chan error, 1)
				rel <- done
				if err := <-done; err != nil {
					t.Errorf("Release: %v", err)
				}
			}
			if _, err := ml.Acquire(ctx); errors.Is(err, multilock.ErrBusy) {
				t.Errorf("MultiLock still busy after Release: %v", err)
			} else if err == nil {
				_ = ml.Release(ctx)
			}
			waitFor(t, 10*time.Second, "no node left", func() bool {
				return len(children(zc, pa)) == 0 && len(children(zc, pb)) == 0
			})
			for _, s := range []*conn.Session{sa, sb} {
				sid := epochOf(t, s).SessionID()
				if !eventually(5*time.Second, func() bool { return len(sessionWatches(t, c, 0, sid)) == 0 }) {
					t.Errorf("session keeps watches %v", sessionWatches(t, c, 0, sid))
				}
			}
			if !eventually(5*time.Second, func() bool { return runtime.NumGoroutine() <= g0 }) {
				t.Errorf("goroutines %d, were %d", runtime.NumGoroutine(), g0)
			}
		})
	}
}
