package attack_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// holder runs Acquire on m in a goroutine of its own (the mutex is per
// goroutine), reports the grant on granted, and releases when told.
type holder struct {
	granted chan *conn.Lease
	failed  chan error
	release chan chan error
	// relTimeout bounds the release's ctx when set (before stop).
	relTimeout time.Duration
}

func hold(ctx context.Context, m *mutex.InterProcessMutex) *holder {
	h := &holder{granted: make(chan *conn.Lease, 1), failed: make(chan error, 1), release: make(chan chan error)}
	go func() {
		l, err := m.Acquire(ctx)
		if err != nil {
			h.failed <- err
			return
		}
		h.granted <- l
		select {
		case done := <-h.release:
			rctx := context.WithoutCancel(ctx)
			if h.relTimeout > 0 {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(rctx, h.relTimeout)
				defer cancel()
			}
			done <- m.Release(rctx)
		case <-ctx.Done():
			_ = m.Release(context.WithoutCancel(ctx))
		}
	}()
	return h
}

func (h *holder) wait(t *testing.T, d time.Duration, who string) *conn.Lease {
	t.Helper()
	select {
	case l := <-h.granted:
		return l
	case err := <-h.failed:
		t.Fatalf("%s: acquire: %v", who, err)
	case <-time.After(d):
		t.Fatalf("%s: not granted within %v", who, d)
	}
	return nil
}

func (h *holder) stop() error {
	done := make(chan error, 1)
	h.release <- done
	return <-done
}

// TestProbe2_LocalHandoffRefusedAfterFault checks mutex.WithLocalHandoff's
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
func TestProbe2_LocalHandoffRefusedAfterFault(t *testing.T) {
	for _, fault := range []string{"bystander-delete", "expire", "suspended"} {
		t.Run(fault, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 28*time.Second)
			path := c.Root() + "/r2-handoff/lock"
			bys := raw(t, c)
			px := zktest.NewProxy(t, c.Servers())
			sA := session(t, px.Addrs(), conn.WithSessionTimeout(6*time.Second))
			sB := session(t, c.Servers())
			mA, _ := mutex.New(sA, path, mutex.WithLocalHandoff(5, 0))
			mB, _ := mutex.New(sB, path)

			g1 := hold(ctx, mA)
			l1 := g1.wait(t, 10*time.Second, "G1")
			lost1 := l1.Lost()
			b := hold(ctx, mB)
			waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(bys, path)) == 2 })
			g2 := hold(ctx, mA)
			waitFor(t, 10*time.Second, "G2 waiting in the process (getW on G1's node)", func() bool {
				return watched(c, 0, l1.Path())
			})
			var bHolds atomic.Bool
			switch fault {
			case "bystander-delete":
				if err := bys.Delete(l1.Path(), -1); err != nil {
					t.Fatal(err)
				}
			case "expire":
				ep, err := sA.Epoch(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := zktest.ExpireEpoch(ctx, c.Servers()[0], ep); err != nil {
					t.Fatal(err)
				}
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
			err := g1.stop()
			t.Logf("G1's release after the fault: %v", err)
			if fault == "suspended" {
				// G2 must not be handed the node while A is suspended.
				select {
				case <-g2.granted:
					t.Fatal("G2 granted while A is suspended")
				case <-time.After(500 * time.Millisecond):
				}
				px.Heal()
				lb = b.wait(t, 15*time.Second, "B")
				bHolds.Store(true)
			}
			select {
			case <-g2.granted:
				t.Fatalf("G2 granted while B holds (two holders); nodes %v", children(bys, path))
			case err := <-g2.failed:
				t.Logf("G2's acquire failed: %v", err)
				g2 = nil
			case <-time.After(time.Second):
			}
			fb, err := lb.Fence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			bHolds.Store(false)
			if err := b.stop(); err != nil {
				t.Fatal(err)
			}
			if g2 == nil {
				return
			}
			l2 := g2.wait(t, 15*time.Second, "G2")
			f2, err := l2.Fence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if f2.Compare(fb) <= 0 {
				t.Fatalf("G2's fence %v not above B's %v", f2, fb)
			}
			t.Logf("B's fence %v, G2's %v", fb, f2)
			if err := g2.stop(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
		})
	}
}

var _ = zk.ErrNoNode
