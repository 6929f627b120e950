package attack_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// oddNames are children a bystander creates under a lock path: none is a
// lock node of any client library (no sequence number to parse).
var oddNames = []string{"y", "lock-", "_c_x-lock-", "_c_x-lock-abc", "h-W-", "h-R-xyz", "-latch-", "leases0", "locks0", "_c_-lease-zz"}

// TestProbe_OddChildrenUnderLockPathsAreIgnored checks that a bystander's
// children that are no lock node (names without a sequence number) neither
// block nor break a handoff between two sessions, for every recipe; and
// that Participants (mutex/doc.go's Participant: "a node that counts in the
// lock's queue") does not fail on them. The docs do not say how such
// children are treated (README: "Nothing is left behind", rwlock/doc.go:
// "Names are parsed from the right"); this pins that they are ignored.
func TestProbe_OddChildrenUnderLockPathsAreIgnored(t *testing.T) {
	c := zktest.New(t)
	sa := session(t, c.Servers())
	sb := session(t, c.Servers())
	zc := raw(t, c)
	type side struct {
		acq func(ctx context.Context) error
		rel func(ctx context.Context) error
	}
	cases := []struct {
		name string
		dirs []string // where the bystander puts odd children, below path
		mk   func(s *zk.Conn, path string) (a, b side)
	}{
		{"mutex", []string{""}, func(_ *zk.Conn, path string) (side, side) {
			ma, _ := mutex.New(sa, path)
			mb, _ := mutex.New(sb, path)
			return side{func(ctx context.Context) error {
					_, err := ma.Acquire(ctx)
					if err == nil {
						_, err = ma.Participants(ctx)
					}
					return err
				}, ma.Release},
				side{func(ctx context.Context) error { _, err := mb.Acquire(ctx); return err }, mb.Release}
		}},
		{"rwlock", []string{""}, func(_ *zk.Conn, path string) (side, side) {
			ra, _ := rwlock.New(sa, path)
			rb, _ := rwlock.New(sb, path)
			return side{func(ctx context.Context) error { _, err := ra.WriteLock().Acquire(ctx); return err }, ra.WriteLock().Release},
				side{func(ctx context.Context) error { _, err := rb.ReadLock().Acquire(ctx); return err }, rb.ReadLock().Release}
		}},
		{"semaphoremutex", []string{"", "/locks", "/leases"}, func(_ *zk.Conn, path string) (side, side) {
			ma, _ := semaphoremutex.New(sa, path)
			mb, _ := semaphoremutex.New(sb, path)
			return side{func(ctx context.Context) error {
					_, err := ma.Acquire(ctx)
					if err == nil {
						_, err = ma.Participants(ctx)
					}
					return err
				}, ma.Release},
				side{func(ctx context.Context) error { _, err := mb.Acquire(ctx); return err }, mb.Release}
		}},
		{"semaphore-1", []string{"", "/locks", "/leases"}, func(_ *zk.Conn, path string) (side, side) {
			sema, _ := semaphoremutex.NewSemaphore(sa, path, 1)
			semb, _ := semaphoremutex.NewSemaphore(sb, path, 1)
			var ga, gb = make(chan func(context.Context) error, 1), make(chan func(context.Context) error, 1)
			return side{func(ctx context.Context) error {
					l, err := sema.Acquire(ctx)
					if err == nil {
						ga <- func(ctx context.Context) error { return sema.ReturnLease(ctx, l) }
					}
					return err
				}, func(ctx context.Context) error { return (<-ga)(ctx) }},
				side{func(ctx context.Context) error {
					l, err := semb.Acquire(ctx)
					if err == nil {
						gb <- func(ctx context.Context) error { return semb.ReturnLease(ctx, l) }
					}
					return err
				}, func(ctx context.Context) error { return (<-gb)(ctx) }}
		}},
		{"exclusive", []string{""}, func(_ *zk.Conn, path string) (side, side) {
			xa, _ := exclusive.New(sa, path)
			xb, _ := exclusive.New(sb, path)
			return side{func(ctx context.Context) error { _, err := xa.Acquire(ctx); return err }, xa.Release},
				side{func(ctx context.Context) error { _, err := xb.Acquire(ctx); return err }, xb.Release}
		}},
		{"leader", []string{""}, func(_ *zk.Conn, path string) (side, side) {
			ea, _ := leader.New(sa, path, "a")
			eb, _ := leader.New(sb, path, "b")
			return side{func(ctx context.Context) error {
					_, err := ea.Campaign(ctx)
					if err == nil {
						_, err = ea.Participants(ctx)
					}
					if err == nil {
						_, err = ea.Leader(ctx)
					}
					return err
				}, ea.Resign},
				side{func(ctx context.Context) error { _, err := eb.Campaign(ctx); return err }, eb.Resign}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := c.Root() + "/odd-" + tc.name
			for _, d := range tc.dirs {
				dir := path + d
				for _, p := range []string{c.Root(), path, dir} {
					_, _ = zc.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
				}
				for _, n := range oddNames {
					if _, err := zc.Create(dir+"/"+n, []byte("odd"), 0, zk.WorldACL(zk.PermAll)); err != nil {
						t.Fatalf("bystander create %s/%s: %v", dir, n, err)
					}
				}
			}
			a, b := tc.mk(zc, path)
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := a.acq(actx); err != nil {
				t.Fatalf("A's acquire among odd children: %v", err)
			}
			bGot, bRel, bRelErr := make(chan error, 1), make(chan struct{}), make(chan error, 1)
			go func() { // B acquires and releases on one goroutine (mutex, rwlock)
				err := b.acq(actx)
				bGot <- err
				if err == nil {
					<-bRel
					bRelErr <- b.rel(ctx)
				}
			}()
			select {
			case err := <-bGot:
				t.Fatalf("B got in (or failed) while A holds: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := a.rel(ctx); err != nil {
				t.Fatalf("A's release: %v", err)
			}
			if err := <-bGot; err != nil {
				t.Fatalf("B's acquire after A's release: %v", err)
			}
			close(bRel)
			if err := <-bRelErr; err != nil {
				t.Fatalf("B's release: %v", err)
			}
		})
	}
}
