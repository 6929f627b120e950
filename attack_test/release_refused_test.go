package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

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

type held struct {
	lease   *conn.Lease
	release func(context.Context) error
}

// TestProbe_ReleaseRefusedByServerLeavesLockHeld checks lock's contract
// (go doc ./lock): "Any other error (the server refused the delete) leaves
// the lock held: call Release again", for every recipe, with the refusal
// made by a bystander that takes DELETE off the lock node's parent (its ACL
// is the world's, so anyone may), then gives it back.
func TestProbe_ReleaseRefusedByServerLeavesLockHeld(t *testing.T) {
	c := zktest.New(t)
	s := session(t, c.Servers())
	zc := raw(t, c)
	recipes := []struct {
		name string
		take func(ctx context.Context, path string) (held, error)
	}{
		{"mutex", func(ctx context.Context, path string) (held, error) {
			m, err := mutex.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := m.Acquire(ctx)
			return held{l, m.Release}, err
		}},
		{"mutex-localhandoff", func(ctx context.Context, path string) (held, error) {
			m, err := mutex.New(s, path, mutex.WithLocalHandoff(4, 0))
			if err != nil {
				return held{}, err
			}
			l, err := m.Acquire(ctx)
			return held{l, m.Release}, err
		}},
		{"rwlock-write", func(ctx context.Context, path string) (held, error) {
			rw, err := rwlock.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := rw.WriteLock().Acquire(ctx)
			return held{l, rw.WriteLock().Release}, err
		}},
		{"rwlock-read", func(ctx context.Context, path string) (held, error) {
			rw, err := rwlock.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := rw.ReadLock().Acquire(ctx)
			return held{l, rw.ReadLock().Release}, err
		}},
		{"semaphoremutex", func(ctx context.Context, path string) (held, error) {
			m, err := semaphoremutex.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := m.Acquire(ctx)
			return held{l, m.Release}, err
		}},
		{"semaphore-2", func(ctx context.Context, path string) (held, error) {
			sem, err := semaphoremutex.NewSemaphore(s, path, 2)
			if err != nil {
				return held{}, err
			}
			l, err := sem.Acquire(ctx)
			return held{l, func(ctx context.Context) error { return sem.ReturnLease(ctx, l) }}, err
		}},
		{"exclusive", func(ctx context.Context, path string) (held, error) {
			x, err := exclusive.New(s, path)
			if err != nil {
				return held{}, err
			}
			l, err := x.Acquire(ctx)
			return held{l, x.Release}, err
		}},
		{"leader", func(ctx context.Context, path string) (held, error) {
			e, err := leader.New(s, path, "me")
			if err != nil {
				return held{}, err
			}
			l, err := e.Campaign(ctx)
			return held{l, e.Resign}, err
		}},
		{"multilock", func(ctx context.Context, path string) (held, error) {
			a, err := mutex.New(s, path)
			if err != nil {
				return held{}, err
			}
			b, err := semaphoremutex.New(s, path+"-other")
			if err != nil {
				return held{}, err
			}
			m, err := multilock.New(a, b)
			if err != nil {
				return held{}, err
			}
			ls, err := m.Acquire(ctx)
			if err != nil {
				return held{}, err
			}
			for _, l := range ls {
				if conn.ParentPath(l.Path()) == path {
					return held{l, m.Release}, nil
				}
			}
			return held{}, errors.New("no lease under " + path)
		}},
	}
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := c.Root() + "/refused-" + r.name
			h, err := r.take(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			parent := conn.ParentPath(h.lease.Path())
			if _, err := zc.SetACL(parent, zk.WorldACL(zk.PermAll&^zk.PermDelete), -1); err != nil {
				t.Fatalf("bystander setACL: %v", err)
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = h.release(rctx)
			cancel()
			exists, _, _ := zc.Exists(h.lease.Path())
			t.Logf("refused release: err=%v; node exists: %v; lease err: %v", err, exists, h.lease.Err())
			switch {
			case err == nil && exists:
				t.Errorf("Release returned nil, but the node %s is still on the server", h.lease.Path())
			case err == nil:
				t.Errorf("Release returned nil though the server refuses deletes under %s", parent)
			case errors.Is(err, lock.ErrReleasePending):
				t.Errorf("a refusal (known outcome) reported as ErrReleasePending: %v", err)
			case !errors.Is(err, zk.ErrNoAuth):
				t.Errorf("release error does not match zk.ErrNoAuth: %v", err)
			}
			if !exists {
				t.Errorf("node %s gone though deletes are refused", h.lease.Path())
			}
			if _, err := zc.SetACL(parent, zk.WorldACL(zk.PermAll), -1); err != nil {
				t.Fatal(err)
			}
			if err := h.release(ctx); err != nil {
				t.Errorf("second Release after the ACL is back: %v", err)
			}
			waitFor(t, 5*time.Second, "the node to be gone", func() bool {
				ok, _, _ := zc.Exists(h.lease.Path())
				return !ok
			})
		})
	}
}
