package attack_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_ReleaseWhileSuspendedReportsPendingDeletion checks mutex's
// Release: "lock.ErrReleasePending when the node's deletion could not be
// confirmed (the connection is down or ctx ended) while the session lives:
// the goroutine no longer holds the mutex, but other processes may see it
// held until the background deletion succeeds", and lock.ErrReleasePending's
// "a release whose deletion could not be confirmed (the connection was
// lost ...) while the session lives". The holder's connection is reset and
// its reconnects blackholed (Suspended), then it releases; the node is
// still on the server (a bystander sees it). With no local waiter, and with
// a goroutine of the same session waiting in the process (WithLocalHandoff),
// which the docs say makes the release delete the node rather than hand it
// on, Release (300 ms deadline) must return an error matching
// lock.ErrReleasePending. Without a deadline the release outlives the epoch
// (ended by the quorum timer) and returns nil while the node is still on the
// server (the doc's "A lease lost while held (the session expired) releases
// without error" says "expired"; the ZooKeeper session has not): the node
// must still go, with the server's expiry, within T.
func TestProbe2_ReleaseWhileSuspendedReportsPendingDeletion(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		localWaiter, nolimit bool
	}{{"alone", false, false}, {"local-waiter", true, false}, {"no-deadline-alone", false, true}, {"no-deadline", true, true}} {
		localWaiter, name := tc.localWaiter, tc.name
		t.Run(name, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 25*time.Second)
			path := c.Root() + "/r2-relsusp/lock"
			bys := raw(t, c)
			px := zktest.NewProxy(t, c.Servers())
			sA := session(t, px.Addrs(), conn.WithSessionTimeout(8*time.Second))
			mA, _ := mutex.New(sA, path, mutex.WithLocalHandoff(5, 0))
			g1 := hold(ctx, mA)
			l1 := g1.wait(t, 10*time.Second, "G1")
			if localWaiter {
				g2 := hold(ctx, mA)
				waitFor(t, 10*time.Second, "G2 waiting in the process", func() bool { return watched(c, 0, l1.Path()) })
				_ = g2
			}
			ep0, err := sA.Epoch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			px.Blackhole()
			px.Cut()
			waitFor(t, 10*time.Second, "A suspended", func() bool { return sA.State() == conn.Suspended })
			if !tc.nolimit {
				g1.relTimeout = 300 * time.Millisecond
			}
			t0 := time.Now()
			err = g1.stop()
			took := time.Since(t0)
			ok, _, exErr := bys.Exists(l1.Path())
			still := exErr == nil && ok
			state := sA.State()
			t.Logf("release (deadline %v) while suspended took %v: %v; node still on the server: %v; A's state: %v", g1.relTimeout, took, err, still, state)
			px.Heal()
			if tc.nolimit {
				// The release outlives the epoch (the quorum timer ends it
				// 7T/12 after the last answered sync) and returns nil, as for a
				// lease lost while held; the ZooKeeper session has not
				// expired and the node is still there: it must go within T.
				if err != nil && !errors.Is(err, lock.ErrReleasePending) {
					t.Fatalf("release: %v", err)
				}
				end := time.Now().Add(12 * time.Second)
				for {
					ok, st, err := bys.Exists(l1.Path())
					if err == nil && !ok {
						break
					}
					if time.Now().After(end) {
						ep1, _ := sA.Epoch(ctx)
						var sid1 int64
						if ep1 != nil {
							sid1 = ep1.SessionID()
						}
						owner := int64(0)
						if st != nil {
							owner = st.EphemeralOwner
						}
						t.Fatalf("released node %s still on the server 12 s after the release (T = 8 s): its owner 0x%x, the released epoch's session 0x%x, A's current epoch's session 0x%x; nodes %v",
							l1.Path(), owner, ep0.SessionID(), sid1, children(bys, path))
					}
					time.Sleep(50 * time.Millisecond)
				}
				return
			}
			if still && !errors.Is(err, lock.ErrReleasePending) {
				t.Fatalf("Release returned %v while its node is still on the server (deletion not confirmed, session alive, state %v): want lock.ErrReleasePending", err, state)
			}
		})
	}
}
