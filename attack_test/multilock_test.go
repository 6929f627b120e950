package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_MultiLockLostOnForeignDeleteOfOneNode checks multilock/doc.go:
// "Lost closes when any lease is lost", and conn.Lease.Lost's "the node was
// deleted by someone else", over a mutex, a write lock and a semaphore
// mutex (one lease) of one session: a bystander deletes the write lock's
// node; the MultiLock's Lost must close, and Release must still succeed.
func TestProbe_MultiLockLostOnForeignDeleteOfOneNode(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	s := session(t, c.Servers())
	zc := raw(t, c)
	root := c.Root() + "/ml-lost"
	a, _ := mutex.New(s, root+"/a")
	b, _ := rwlock.New(s, root+"/b")
	d, _ := semaphoremutex.New(s, root+"/d")
	m, err := multilock.New(d, b.WriteLock(), a)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost := m.Lost()
	var victim *conn.Lease
	for _, l := range leases {
		if conn.ParentPath(l.Path()) == root+"/b" {
			victim = l
		}
	}
	if victim == nil {
		t.Fatal("no lease under /b")
	}
	select {
	case <-lost:
		t.Fatal("Lost closed before anything happened")
	case <-time.After(200 * time.Millisecond):
	}
	if err := zc.Delete(victim.Path(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("MultiLock's Lost open 5 s after a bystander deleted one of its nodes")
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("Release after one node was deleted: %v", err)
	}
	if n := countNodes(zc, root); n != 0 {
		t.Fatalf("%d ephemeral nodes left after Release", n)
	}
}

// TestProbe_MultiLockRollsBackWhenServerRefusesOne checks multilock/doc.go:
// "All or nothing: if any lock cannot be taken, those already taken are
// released, in reverse order ... before Acquire returns", when the last
// lock in path order is refused by the server (a bystander took CREATE off
// its path): Acquire fails with an error matching zk.ErrNoAuth, promptly,
// and none of our nodes is left.
func TestProbe_MultiLockRollsBackWhenServerRefusesOne(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	s := session(t, c.Servers())
	zc := raw(t, c)
	root := c.Root() + "/ml-refused"
	for _, p := range []string{c.Root(), root, root + "/z"} {
		if _, err := zc.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := zc.SetACL(root+"/z", zk.WorldACL(zk.PermAll&^zk.PermCreate), -1); err != nil {
		t.Fatal(err)
	}
	a, _ := mutex.New(s, root+"/a")
	b, _ := rwlock.New(s, root+"/b")
	z, _ := mutex.New(s, root+"/z")
	m, err := multilock.New(z, b.ReadLock(), a)
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err = m.Acquire(actx)
	took := time.Since(start)
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Acquire with /z refused: %v (after %v), want zk.ErrNoAuth", err, took)
	}
	if took > 2*time.Second {
		t.Errorf("Acquire took %v to give up on a refused create", took)
	}
	if n := countNodes(zc, root); n != 0 {
		t.Fatalf("%d ephemeral nodes left after the rollback", n)
	}
	if !a.IsAcquiredInThisProcess() {
		return
	}
	t.Fatal("mutex /a still held after the rollback")
}

// TestProbe_MultiLockOverReentrantHoldKeepsOuterHold checks mutex/doc.go's
// "Reentrancy per goroutine, counted locally: the holding goroutine's
// further Acquire calls return the same *conn.Lease at once, and it must
// call Release as many times" through a MultiLock (multilock/doc.go:
// "Release releases every lock in reverse order"): a goroutine holds mutex
// /a and rwlock /b's write side, then acquires and releases a MultiLock
// over them and a third lock. Its own holds of /a and /b must survive:
// leases not lost, guarded writes committing, nodes present, and another
// session kept out.
func TestProbe_MultiLockOverReentrantHoldKeepsOuterHold(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	s := session(t, c.Servers())
	so := session(t, c.Servers())
	zc := raw(t, c)
	root := c.Root() + "/ml-reentrant"
	a, _ := mutex.New(s, root+"/a")
	b, _ := rwlock.New(s, root+"/b")
	x, _ := semaphoremutex.New(s, root+"/x")
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.WriteLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := multilock.New(x, b.WriteLock(), a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*conn.Lease{"/a": la, "/b": lb} {
		if l.Err() != nil {
			t.Errorf("%s: lease lost after the MultiLock's release: %v", name, l.Err())
		}
		if _, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: root + name + "-res", Acl: zk.WorldACL(zk.PermAll)}); err != nil {
			t.Errorf("%s: guarded write after the MultiLock's release: %v", name, err)
		}
		if ok, _, _ := zc.Exists(l.Path()); !ok {
			t.Errorf("%s: node gone after the MultiLock's release", name)
		}
	}
	oa, _ := mutex.New(so, root+"/a")
	if _, ok, err := oa.TryAcquire(ctx); ok || err != nil {
		t.Errorf("another session took /a: ok=%v err=%v", ok, err)
	}
	ob, _ := rwlock.New(so, root+"/b")
	if _, ok, err := ob.ReadLock().TryAcquire(ctx); ok || err != nil {
		t.Errorf("another session read /b: ok=%v err=%v", ok, err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteLock().Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "no node left", func() bool { return countNodes(zc, root) == 0 })
}
