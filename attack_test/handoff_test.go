package attack_test

import (
	"context"
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
			px := f.Proxy()
			s := f.SessionAt(px.Addrs())
			zc := f.Raw()
			path := f.Path("inflight-") + tc.name
			res := f.Path("inflight-res-") + tc.name
			h := tc.mk(s, path)
			l1, err := h.acquire1(ctx)
			require.NoError(t, err)
			_, err = connlink.Of(l1.Epoch()).Create(ctx, res, nil, 0, zk.WorldACL(zk.PermAll))
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
				_, err := l1.GuardedWrite(ctx, &zk.SetDataRequest{Path: res, Data: []byte("grant1"), Version: -1})
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
				d, _, _ := zc.Get(res)
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
	for _, fault := range []string{"bystander-delete", "expire", "suspended"} {
		t.Run(fault, func(t *testing.T) {
			f := newFixture(t)
			ctx := ctxT(t, 28*time.Second)
			path := f.Path("r2-handoff/lock")
			bys := f.Raw()
			px := f.Proxy()
			sA := f.SessionAt(px.Addrs(), conn.WithSessionTimeout(6*time.Second))
			sB := f.Session()
			mA, _ := mutex.New(sA, path, lock.WithLocalHandoff(5, 0))
			mB, _ := mutex.New(sB, path)

			g1 := hold(ctx, mA)
			l1 := g1.wait(t, 10*time.Second, "G1")
			lost1 := l1.Lost()
			b := hold(ctx, mB)
			waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(bys, path)) == 2 })
			g2 := hold(ctx, mA)
			waitFor(t, 10*time.Second, "G2 waiting in the process (getW on G1's node)", func() bool {
				return watched(f, 0, l1.Path())
			})
			var bHolds atomic.Bool
			switch fault {
			case "bystander-delete":
				require.NoError(t, bys.Delete(l1.Path(), -1))
			case "expire":
				ep, err := connlink.Of(sA).Epoch(ctx)
				require.NoError(t, err)
				require.NoError(t, zktest.ExpireEpoch(ctx, f.Servers()[0], ep))
			case "suspended":
				px.Blackhole()
				px.Cut()
				waitFor(t, 10*time.Second, "A suspended", func() bool { return sA.State() == conn.Suspended })
			}
			if fault != "suspended" {
				select {
				case <-lost1:
				case <-time.After(10 * time.Second):
					t.Fatal("G1's Lost never closed")
				}
			}
			var lb *conn.Lease
			if fault != "suspended" {
				lb = b.wait(t, 10*time.Second, "B")
				bHolds.Store(true)
			}
			err := g1.release()
			t.Logf("G1's release after the fault: %v", err)
			if fault == "suspended" {
				// G2 must not be handed the node while A is suspended.
				select {
				case <-g2.got:
					t.Fatal("G2 granted while A is suspended")
				case <-time.After(500 * time.Millisecond):
				}
				px.Heal()
				lb = b.wait(t, 15*time.Second, "B")
				bHolds.Store(true)
			}
			select {
			case <-g2.got:
				t.Fatalf("G2 granted while B holds (two holders); nodes %v", children(bys, path))
			case err := <-g2.failed:
				t.Logf("G2's acquire failed: %v", err)
				g2 = nil
			case <-time.After(time.Second):
			}
			fb, err := lb.Fence(ctx)
			require.NoError(t, err)
			bHolds.Store(false)
			require.NoError(t, b.release())
			if g2 == nil {
				return
			}
			l2 := g2.wait(t, 15*time.Second, "G2")
			f2, err := l2.Fence(ctx)
			require.NoError(t, err)
			if f2.Compare(fb) <= 0 {
				t.Fatalf("G2's fence %v not above B's %v", f2, fb)
			}
			t.Logf("B's fence %v, G2's %v", fb, f2)
			require.NoError(t, g2.release())
			waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
		})
	}
}

var _ = zk.ErrNoNode

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
	for _, seen := range []bool{true, false} {
		name := "unseen"
		if seen {
			name = "seen"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := ctxT(t, 25*time.Second)
			path := f.Path("r2-revoke/lock")
			bys := f.Raw()
			sA := f.Session()
			sB := f.Session()
			mA, _ := mutex.New(sA, path, lock.WithLocalHandoff(5, 0), lock.WithRevocable())
			mB, _ := mutex.New(sB, path, lock.WithRevocable())
			g1 := hold(ctx, mA)
			l1 := g1.wait(t, 10*time.Second, "G1")
			var rev1 <-chan struct{}
			if seen {
				rev1 = l1.Revoked()
			}
			b := hold(ctx, mB)
			waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(bys, path)) == 2 })
			g2 := hold(ctx, mA)
			waitFor(t, 10*time.Second, "G2 waiting in the process", func() bool { return watched(f, 0, l1.Path()) })
			require.NoError(t, lock.Revoke(ctx, sB, l1.Path()), "revoke")
			if seen {
				select {
				case <-rev1:
				case <-time.After(5 * time.Second):
					t.Fatal("G1's Revoked never closed")
				}
			} else {
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
					select {
					case <-l2.Revoked():
					case <-time.After(3 * time.Second):
						t.Fatal("G2 holds the revoked node and its Revoked never closes: the revoke request is lost")
					}
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
}
