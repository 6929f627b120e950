package attack_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_NamespacePathsAreOneCoordinateSystem checks, under
// conn.WithNamespace ("a chroot that callers never see"), that the paths the
// public API hands out (Lease.Path, Participant.Node) are the ones it takes
// back (Epoch.Exists, Revoke), for mutex, rwlock, semaphore mutex and
// leader; that a lock taken through a namespace excludes one taken through
// the full path without it (one lock, multilock/doc.go's "One lock is one
// lock"); that GuardedWrite's ops are namespaced; and that multilock.New
// refuses the same full path reached through two namespaces
// (ErrDuplicatePath).
func TestProbe_NamespacePathsAreOneCoordinateSystem(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	ns := c.Root() + "/ns"
	sn := session(t, c.Servers(), conn.WithNamespace(ns))
	sp := session(t, c.Servers()) // plain, sees the full paths
	zc := raw(t, c)

	t.Run("mutex", func(t *testing.T) {
		m, _ := mutex.New(sn, "/m", mutex.WithRevocable())
		l, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok, _, err := l.Epoch().Exists(ctx, l.Path()); !ok || err != nil {
			t.Errorf("Lease.Path %q not found through its own epoch: %v %v", l.Path(), ok, err)
		}
		ps, err := m.Participants(ctx)
		if err != nil || len(ps) != 1 || ps[0].Node != l.Path() {
			t.Errorf("Participants %+v (%v), want one with Node %q", ps, err, l.Path())
		}
		// The same lock through the full path, without a namespace.
		other, _ := mutex.New(sp, sn.FullPath("/m"))
		_, ok, err := other.TryAcquire(ctx)
		if ok || err != nil {
			t.Errorf("TryAcquire of the same lock through its full path: ok=%v err=%v, want (false, nil)", ok, err)
			if ok {
				_ = other.Release(ctx)
			}
		}
		// GuardedWrite is namespaced.
		if _, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: "/m-res", Data: []byte("x"), Acl: zk.WorldACL(zk.PermAll)}); err != nil {
			t.Fatal(err)
		}
		if ok, _, _ := zc.Exists(ns + "/m-res"); !ok {
			t.Errorf("GuardedWrite's create did not land at %s", ns+"/m-res")
		}
		rev := l.Revoked()
		if err := m.Revoke(ctx, ps[0].Node); err != nil {
			t.Errorf("Revoke(Participant.Node) under a namespace: %v", err)
		}
		select {
		case <-rev:
		case <-time.After(5 * time.Second):
			t.Errorf("Revoked not closed after Revoke(Participant.Node)")
		}
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("rwlock", func(t *testing.T) {
		rw, _ := rwlock.New(sn, "/rw")
		l, err := rw.WriteLock().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok, _, err := l.Epoch().Exists(ctx, l.Path()); !ok || err != nil {
			t.Errorf("Lease.Path %q not found through its own epoch: %v %v", l.Path(), ok, err)
		}
		other, _ := rwlock.New(sp, sn.FullPath("/rw"))
		_, ok, err := other.ReadLock().TryAcquire(ctx)
		if ok || err != nil {
			t.Errorf("read TryAcquire through the full path while written: ok=%v err=%v", ok, err)
			if ok {
				_ = other.ReadLock().Release(ctx)
			}
		}
		if err := rw.WriteLock().Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("semaphoremutex", func(t *testing.T) {
		m, _ := semaphoremutex.New(sn, "/s", semaphoremutex.WithRevocable())
		l, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok, _, err := l.Epoch().Exists(ctx, l.Path()); !ok || err != nil {
			t.Errorf("Lease.Path %q not found through its own epoch: %v %v", l.Path(), ok, err)
		}
		ps, err := m.Participants(ctx)
		if err != nil || len(ps) != 1 {
			t.Fatalf("Participants %+v (%v)", ps, err)
		}
		rev := l.Revoked()
		if err := m.Revoke(ctx, ps[0].Node); err != nil {
			t.Errorf("Revoke(Participant.Node %q) under a namespace: %v", ps[0].Node, err)
		}
		select {
		case <-rev:
		case <-time.After(5 * time.Second):
			t.Errorf("Revoked not closed after Revoke(Participant.Node %q), lease %q", ps[0].Node, l.Path())
		}
		other, _ := semaphoremutex.New(sp, sn.FullPath("/s"))
		_, ok, err := other.TryAcquire(ctx)
		if ok || err != nil {
			t.Errorf("TryAcquire through the full path: ok=%v err=%v", ok, err)
			if ok {
				_ = other.Release(ctx)
			}
		}
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("leader", func(t *testing.T) {
		e, _ := leader.New(sn, "/l", "n")
		l, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.Leader(ctx)
		if err != nil || p.Node != l.Path() || p.ID != "n" {
			t.Errorf("Leader %+v (%v), want Node %q", p, err, l.Path())
		}
		o, _ := leader.New(sp, sn.FullPath("/l"), "p")
		if p2, err := o.Leader(ctx); err != nil || p2.ID != "n" {
			t.Errorf("Leader through the full path: %+v %v", p2, err)
		}
		if err := e.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("multilock", func(t *testing.T) {
		a, _ := mutex.New(sn, "/x/y")
		sn2 := session(t, c.Servers(), conn.WithNamespace(ns+"/x"))
		b, _ := mutex.New(sn2, "/y")
		if _, err := multilock.New(a, b); !errors.Is(err, multilock.ErrDuplicatePath) {
			t.Errorf("multilock.New over %s reached through two namespaces: %v, want ErrDuplicatePath", sn.FullPath("/x/y"), err)
		}
	})
}
