package attack_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_RevokeSeenAcrossLocalHandoff checks mutex.WithLocalHandoff's
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
func TestProbe2_RevokeSeenAcrossLocalHandoff(t *testing.T) {
	for _, seen := range []bool{true, false} {
		name := "unseen"
		if seen {
			name = "seen"
		}
		t.Run(name, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 25*time.Second)
			path := c.Root() + "/r2-revoke/lock"
			bys := raw(t, c)
			sA := session(t, c.Servers())
			sB := session(t, c.Servers())
			mA, _ := mutex.New(sA, path, mutex.WithLocalHandoff(5, 0), mutex.WithRevocable())
			mB, _ := mutex.New(sB, path, mutex.WithRevocable())
			g1 := hold(ctx, mA)
			l1 := g1.wait(t, 10*time.Second, "G1")
			var rev1 <-chan struct{}
			if seen {
				rev1 = l1.Revoked()
			}
			b := hold(ctx, mB)
			waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(bys, path)) == 2 })
			g2 := hold(ctx, mA)
			waitFor(t, 10*time.Second, "G2 waiting in the process", func() bool { return watched(c, 0, l1.Path()) })
			if err := mB.Revoke(ctx, l1.Path()); err != nil {
				t.Fatalf("revoke: %v", err)
			}
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
			if err := g1.stop(); err != nil {
				t.Fatal(err)
			}
			select {
			case l2 := <-g2.granted:
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
				if err := g2.stop(); err != nil {
					t.Fatal(err)
				}
				b.wait(t, 10*time.Second, "B")
			case <-b.granted:
				t.Logf("B entered after G1")
				if err := b.stop(); err != nil {
					t.Fatal(err)
				}
				g2.wait(t, 10*time.Second, "G2")
				if err := g2.stop(); err != nil {
					t.Fatal(err)
				}
				return
			case <-time.After(10 * time.Second):
				t.Fatalf("neither G2 nor B entered; nodes %v", children(bys, path))
			}
		})
	}
}
