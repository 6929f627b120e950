package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_ReleaseWithoutCancelWhileBlackholedReturns checks the README's
// own pattern, "Release even if ctx is cancelled by now: the lock node must
// go. ... m.Release(context.WithoutCancel(ctx))", against lock's contract
// "ErrReleasePending when the delete's outcome is unknown", with the
// connection blackholed for good (Proxy.Blackhole, no Heal): a Release with
// a context that never ends must still return (ErrReleasePending, or nil
// once the epoch is taken as lost) within the session timeout (2 s here)
// plus a margin, for every recipe, not hang.
func TestProbe_ReleaseWithoutCancelWhileBlackholedReturns(t *testing.T) {
	c := zktest.New(t)
	cases := []struct {
		name string
		take func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error)
	}{
		{"mutex", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			m, _ := mutex.New(s, path)
			_, err := m.Acquire(ctx)
			return m.Release, err
		}},
		{"rwlock", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			rw, _ := rwlock.New(s, path)
			_, err := rw.WriteLock().Acquire(ctx)
			return rw.WriteLock().Release, err
		}},
		{"semaphoremutex", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			m, _ := semaphoremutex.New(s, path)
			_, err := m.Acquire(ctx)
			return m.Release, err
		}},
		{"semaphore-3", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			sem, _ := semaphoremutex.NewSemaphore(s, path, 3)
			l, err := sem.Acquire(ctx)
			return func(ctx context.Context) error { return sem.ReturnLease(ctx, l) }, err
		}},
		{"exclusive", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			x, _ := exclusive.New(s, path)
			_, err := x.Acquire(ctx)
			return x.Release, err
		}},
		{"leader", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			e, _ := leader.New(s, path, "x")
			_, err := e.Campaign(ctx)
			return e.Resign, err
		}},
		{"multilock", func(ctx context.Context, s *conn.Session, path string) (func(context.Context) error, error) {
			a, _ := mutex.New(s, path+"/a")
			b, _ := semaphoremutex.New(s, path+"/b")
			m, _ := multilock.New(a, b)
			_, err := m.Acquire(ctx)
			return m.Release, err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 25*time.Second)
			px := zktest.NewProxy(t, c.Servers())
			s := session(t, px.Addrs(), conn.WithSessionTimeout(2*time.Second))
			release, err := tc.take(ctx, s, c.Root()+"/rel-bh-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			px.Blackhole()
			// Release runs on this goroutine (mutex and rwlock are owned by
			// it); a watchdog heals the proxy after 5 s so that a hang ends.
			healed := time.AfterFunc(5*time.Second, px.Heal)
			start := time.Now()
			err = release(context.WithoutCancel(ctx))
			took := time.Since(start)
			t.Logf("Release after %v: %v", took.Round(time.Millisecond), err)
			if !healed.Stop() {
				t.Fatalf("Release with a ctx that never ends ran %v into a blackhole, past the 5 s watchdog (session timeout 2 s)", took)
			}
			if err != nil && !errors.Is(err, lock.ErrReleasePending) {
				t.Errorf("Release while blackholed: %v, want nil or ErrReleasePending", err)
			}
			px.Heal()
		})
	}
}
