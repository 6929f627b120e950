package attack_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

type simpleLocker interface {
	Acquire(context.Context) (*conn.Lease, error)
	Release(context.Context) error
}

// TestProbe3_SuspendedAsLostReleaseLeavesNode: under conn.WithSuspendedAsLost
// a holder is told its lock is lost as soon as the connection is suspended,
// but the ZooKeeper session survives a short cut, and with it the lock node.
// The holder then does what package lock says: "Release after loss (Lost
// closed) returns nil: the node went with its session, or someone deleted
// it; there is nothing left to release, and the handle can acquire again",
// and docs/safety.md guarantee 5, "Nothing of ours is left behind", and
// guarantee 2 ("after any number of acquire/release cycles on an open
// session the server holds no watch of that session on lock nodes").
// After the Release the node must go (another session acquires), the
// server must hold no watch of the session, the watches gauge
// (conn.Metrics.Watches) must be back to 0, and the loss must be counted
// once with cause "suspended".
func TestProbe3_SuspendedAsLostReleaseLeavesNode(t *testing.T) {
	for _, recipe := range []string{"mutex", "semaphoremutex", "rwlock-write", "rwlock-read", "exclusive"} {
		t.Run(recipe, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 40*time.Second)
			px := zktest.NewProxy(t, c.Servers())
			rec := &metricsRec{}
			s := session(t, px.Addrs(), conn.WithSuspendedAsLost(), conn.WithMetrics(rec))
			other := session(t, c.Servers())
			zc := raw(t, c)
			path := c.Root() + "/r3-susp/" + recipe
			mk := func(s *conn.Session) simpleLocker {
				switch recipe {
				case "mutex":
					m, _ := mutex.New(s, path)
					return m
				case "semaphoremutex":
					m, _ := semaphoremutex.New(s, path)
					return m
				case "rwlock-write":
					rw, _ := rwlock.New(s, path)
					return rw.WriteLock()
				case "rwlock-read":
					rw, _ := rwlock.New(s, path)
					return rw.ReadLock()
				default:
					m, _ := exclusive.New(s, path)
					return m
				}
			}
			lk := mk(s)
			sid := epochOf(t, s).SessionID()
			l, err := lk.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			lost := l.Lost()
			waitFor(t, 5*time.Second, "lease watched", func() bool { return rec.watches.Load() == 1 })
			px.Cut()
			select {
			case <-lost:
			case <-time.After(5 * time.Second):
				t.Fatal("Lost not closed on suspension")
			}
			waitFor(t, 10*time.Second, "reconnected", func() bool { return s.State() == conn.Reconnected })
			if got := epochOf(t, s).SessionID(); got != sid {
				t.Fatalf("session changed (%x -> %x): the cut was too long", sid, got)
			}
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			err = lk.Release(rctx)
			rcancel()
			t.Logf("release after suspended loss: %v", err)

			// Another session must get the lock (the node must go); write
			// lock for the rwlock so that a kept read node counts too.
			var olk simpleLocker
			if recipe == "rwlock-read" {
				rw, _ := rwlock.New(other, path)
				olk = rw.WriteLock()
			} else {
				olk = mk(other)
			}
			octx, ocancel := context.WithTimeout(ctx, 6*time.Second)
			defer ocancel()
			ol, oerr := olk.Acquire(octx)
			if oerr != nil {
				t.Errorf("another session could not acquire after the release (nodes %v): %v", children(zc, path), oerr)
			} else {
				_ = olk.Release(context.WithoutCancel(ctx))
				_ = ol
			}
			if !eventually(3*time.Second, func() bool { return len(sessionWatches(t, c, 0, sid)) == 0 }) {
				w := sessionWatches(t, c, 0, sid)
				t.Errorf("server still holds watches of the session: %v", w)
			}
			if !eventually(3*time.Second, func() bool { return rec.watches.Load() == 0 }) {
				g := rec.watches.Load()
				t.Errorf("watches gauge %d, want 0", g)
			}
			if n := rec.count(conn.LockLost, "", conn.CauseSuspended); n != 1 {
				t.Errorf("losses with cause suspended: %d, want 1 (%s)", n, rec.dump())
			}
		})
	}
}
