package attack_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// mutexAndRW makes a mutex at root/a and an rwlock at root/b in s.
func mutexAndRW(s *conn.Session, root string) (*mutex.InterProcessMutex, *rwlock.RWLock) {
	a, _ := mutex.New(s, root+"/a")
	b, _ := rwlock.New(s, root+"/b")
	return a, b
}

// TestMultiLockLostOnForeignDeleteOfOneNode checks multilock/doc.go:
// "Lost closes when any lease is lost", and conn.Lease.Lost's "the node was
// deleted by someone else", over a mutex, a write lock and a semaphore
// mutex (one lease) of one session: a bystander deletes the write lock's
// node; the MultiLock's Lost must close, and Release must still succeed.
func TestMultiLockLostOnForeignDeleteOfOneNode(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	s, zc := f.Session(), f.Raw()
	root := f.Path("ml-lost")
	a, b := mutexAndRW(s, root)
	d, _ := semaphoremutex.New(s, root+"/d")
	m, err := multilock.New(d, b.WriteLock(), a)
	require.NoError(t, err)
	leases, err := m.Acquire(ctx)
	require.NoError(t, err)
	lost := m.Lost()
	var victim *conn.Lease
	for _, l := range leases {
		if zkpath.Parent(l.Path()) == root+"/b" {
			victim = l
		}
	}
	if victim == nil {
		t.Fatal("no lease under /b")
	}
	quiet(t, lost, 200*time.Millisecond, "Lost closed before anything happened")
	require.NoError(t, zc.Delete(victim.Path(), -1))
	recv(t, lost, 5*time.Second, "MultiLock's Lost open 5 s after a bystander deleted one of its nodes")
	require.NoError(t, m.Release(ctx), "Release after one node was deleted")
	if n := countNodes(zc, root); n != 0 {
		t.Fatalf("%d ephemeral nodes left after Release", n)
	}
}

// TestMultiLockRollsBackWhenServerRefusesOne checks multilock/doc.go:
// "All or nothing: if any lock cannot be taken, those already taken are
// released, in reverse order ... before Acquire returns", when the last
// lock in path order is refused by the server (a bystander took CREATE off
// its path): Acquire fails with an error matching zk.ErrNoAuth, promptly,
// and none of our nodes is left.
func TestMultiLockRollsBackWhenServerRefusesOne(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	s, zc := f.Session(), f.Raw()
	root := f.Path("ml-refused")
	for _, p := range []string{f.Root(), root, root + "/z"} {
		_, err := zc.Create(p, nil, 0, zkWorld)
		require.NoError(t, err)
	}
	_, err := zc.SetACL(root+"/z", zk.WorldACL(zk.PermAll&^zk.PermCreate), -1)
	require.NoError(t, err)
	a, b := mutexAndRW(s, root)
	z, _ := mutex.New(s, root+"/z")
	m, err := multilock.New(z, b.ReadLock(), a)
	require.NoError(t, err)
	took, err := timed(ctx, 5*time.Second, func(ctx context.Context) error { _, err := m.Acquire(ctx); return err })
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Acquire with /z refused: %v (after %v), want zk.ErrNoAuth", err, took)
	}
	if took > 2*time.Second {
		t.Errorf("Acquire took %v to give up on a refused create", took)
	}
	if n := countNodes(zc, root); n != 0 {
		t.Fatalf("%d ephemeral nodes left after the rollback", n)
	}
	if !a.IsOwnedByCurrentGoroutine() {
		return
	}
	t.Fatal("mutex /a still held after the rollback")
}

// TestMultiLockOverReentrantHoldKeepsOuterHold checks mutex/doc.go's
// "Reentrancy per goroutine, counted locally: the holding goroutine's
// further Acquire calls return the same *conn.Lease at once, and it must
// call Release as many times" through a MultiLock (multilock/doc.go:
// "Release releases every lock in reverse order"): a goroutine holds mutex
// /a and rwlock /b's write side, then acquires and releases a MultiLock
// over them and a third lock. Its own holds of /a and /b must survive:
// leases not lost, guarded writes committing, nodes present, and another
// session kept out.
func TestMultiLockOverReentrantHoldKeepsOuterHold(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	s := f.Session()
	so := f.Session()
	zc := f.Raw()
	root := f.Path("ml-reentrant")
	a, b := mutexAndRW(s, root)
	x, _ := semaphoremutex.New(s, root+"/x")
	la, err := a.Acquire(ctx)
	require.NoError(t, err)
	lb, err := b.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	m, err := multilock.New(x, b.WriteLock(), a)
	require.NoError(t, err)
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	for name, l := range map[string]*conn.Lease{"/a": la, "/b": lb} {
		if l.Err() != nil {
			t.Errorf("%s: lease lost after the MultiLock's release: %v", name, l.Err())
		}
		if err := guardedCreate(ctx, l, root+name+"-res"); err != nil {
			t.Errorf("%s: guarded write after the MultiLock's release: %v", name, err)
		}
		if !exists(zc, l.Path()) {
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
	require.NoError(t, a.Release(ctx))
	require.NoError(t, b.WriteLock().Release(ctx))
	waitFor(t, 5*time.Second, "no node left", func() bool { return countNodes(zc, root) == 0 })
}

// TestMultiLockOverLocalHandoffStress checks multilock/doc.go's "Two
// MultiLocks over overlapping sets (A,B and B,A) take the shared locks in
// the same order, so neither can hold one while waiting for one the other
// holds" and mutual exclusion, over locks with in-process handoff
// (lock.WithLocalHandoff, lock.WithLocalHandoff), with conn.Fence's
// "grows strictly with every grant of a lock": 2 sessions × 3 goroutines,
// each looping over MultiLocks of {A,B}, {B,C} or {C,A} for 4 s. Every
// grant is checked against an in-process ledger per lock, and each lock's
// fences must grow in the order the ledger saw the grants.
func TestMultiLockOverLocalHandoffStress(t *testing.T) {
	f := newFixture(t)
	root := f.Path("ml-handoff")
	ctx := ctxT(t, 25*time.Second)
	type ledger struct {
		holder string
		last   conn.Fence
	}
	var mu sync.Mutex
	book := map[string]*ledger{"/a": {}, "/b": {}, "/c": {}}
	stop := time.Now().Add(4 * time.Second)
	var grants int
	onSessions(f, 2, 3, func(s *conn.Session) *conn.Session { return s }, func(s *conn.Session, i int) {
		id, g := fmt.Sprintf("s%dg%d", i/3, i%3), i%3
		mk := func(p string) lock.Locker {
			if p == "/b" {
				l, _ := semaphoremutex.New(s, root+p, lock.WithLocalHandoff(3, 0))
				return l
			}
			l, _ := mutex.New(s, root+p, lock.WithLocalHandoff(3, 0))
			return l
		}
		sets := [][]string{{"/a", "/b"}, {"/c", "/b"}, {"/a", "/c"}}
		for i := 0; time.Now().Before(stop); i++ {
			set := sets[(g+i)%3]
			m, err := multilock.New(mk(set[0]), mk(set[1]))
			if err != nil {
				t.Error(err)
				return
			}
			actx, cancel := context.WithTimeout(ctx, 8*time.Second)
			leases, err := m.Acquire(actx)
			cancel()
			if err != nil {
				t.Errorf("%s: acquire %v: %v", id, set, err)
				return
			}
			mu.Lock()
			for _, l := range leases {
				p := l.Path()
				key := ""
				for k := range book {
					if len(p) > len(root+k) && p[:len(root+k)+1] == root+k+"/" {
						key = k
					}
				}
				led := book[key]
				if led == nil {
					t.Errorf("lease %s under no known lock", p)
					continue
				}
				if led.holder != "" {
					t.Errorf("%s: two holders of %s: %s and %s", id, key, led.holder, id)
				}
				led.holder = id
				f, err := l.Fence(ctx)
				if err != nil {
					t.Errorf("%s: fence %s: %v", id, key, err)
				} else if f.Compare(led.last) <= 0 {
					t.Errorf("%s: fence of %s went from %v to %v", id, key, led.last, f)
				} else {
					led.last = f
				}
			}
			grants++
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			for _, led := range book {
				if led.holder == id {
					led.holder = ""
				}
			}
			mu.Unlock()
			if err := m.Release(ctx); err != nil {
				t.Errorf("%s: release: %v", id, err)
				return
			}
		}
	})
	t.Logf("%d multilock grants", grants)
	zc := f.Raw()
	waitFor(t, 5*time.Second, "no node left", func() bool { return countNodes(zc, root) == 0 })
}

// TestMultiLockTwoSessionsExpiryMidAcquire: a MultiLock over mutex
// /a of session A and mutex /b of session B; C holds /b, so the MultiLock
// holds /a and waits for /b. Then one of the two sessions is expired by the
// server (zktest.ExpireEpoch) and C releases.
//   - A expired (the lock already taken): D takes /a meanwhile. Whatever
//     Acquire returns, the MultiLock must not report whole while D holds /a:
//     multilock's "Holding a MultiLock is holding every lease it returned
//     ... Lost closes when any of them is lost". Release must not leave it
//     busy ("Release after loss (Lost closed) returns nil"), and nothing of
//     A's or B's may remain (no node, no watch) and no goroutine.
//   - B expired (the lock being waited for): lock's "A session lost while
//     waiting is not an error: Acquire starts over in the next one"; the
//     MultiLock gets both, Lost stays open, and a GuardedWrite through each
//     lease commits.
func TestMultiLockTwoSessionsExpiryMidAcquire(t *testing.T) {
	forEach(t, []string{"held-expires", "waiting-expires"}, func(t *testing.T, f *fixture, which string) {
		ctx := ctxT(t, 60*time.Second)
		zc := f.Raw()
		sa := f.Session()
		sb := f.Session()
		pa, pb := f.Root()+"/ml/a", f.Root()+"/ml/b"
		ma, _ := mutex.New(sa, pa)
		mb, _ := mutex.New(sb, pb)
		mc, _ := mutex.New(f.Session(), pb)
		md, _ := mutex.New(f.Session(), pa)
		hc := hold(ctx, mc)
		hc.wait(t, 60*time.Second, "hc")
		g0 := runtime.NumGoroutine()
		ml, err := multilock.New(mb, ma)
		require.NoError(t, err)
		type res struct {
			leases []*conn.Lease
			err    error
		}
		got := make(chan res, 1)
		rel := make(chan chan error)
		go func() {
			ls, err := ml.Acquire(ctx)
			got <- res{ls, err}
			if err == nil {
				done := <-rel
				done <- ml.Release(context.WithoutCancel(ctx))
			}
		}()
		release := func() error {
			done := make(chan error, 1)
			rel <- done
			return <-done
		}
		waitFor(t, 10*time.Second, "/a taken, /b queued", func() bool {
			return len(children(zc, pa)) == 1 && len(children(zc, pb)) == 2
		})
		victim := sa
		if which == "waiting-expires" {
			victim = sb
		}
		ep := epochOf(t, victim)
		f.Expire(ctx, ep)
		recv(t, ep.Done(), 10*time.Second, "epoch not ended")
		var hd *holder
		if which == "held-expires" {
			hd = hold(ctx, md)
			if _, ok := hd.granted(t, 10*time.Second, "D"); !ok {
				t.Fatalf("D not granted /a after A's expiry: %v", children(zc, pa))
			}
		} else {
			// B's waiter queues again in its next epoch
			waitFor(t, 10*time.Second, "B queued again", func() bool { return len(children(zc, pb)) == 2 })
		}
		require.NoError(t, hc.release())
		r := recv(t, got, 20*time.Second, "MultiLock Acquire stuck; /a %v /b %v", nodes{zc, pa}, nodes{zc, pb})
		t.Logf("Acquire returned err=%v", r.err)
		if which == "held-expires" {
			if r.err == nil {
				if _, ok := within(ml.Lost(), 5*time.Second); !ok {
					t.Fatalf("MultiLock returned leases and Lost stays open while D holds /a (lease a err %v)", r.leases[1].Err())
				}
				for _, l := range r.leases {
					if l.Path() == "" {
						t.Error("empty lease path")
					}
				}
				if err := guardedCreate(ctx, r.leases[0], f.Path("ml/x")); err == nil {
					// leases[0] is /a (path order): lost
					t.Error("guarded write through the lost /a lease committed")
				}
				if err := release(); err != nil {
					t.Errorf("Release after loss: %v", err)
				}
			}
			require.NoError(t, hd.release())
		} else {
			require.NoError(t, r.err, "Acquire after B's expiry while waiting")
			select {
			case <-ml.Lost():
				t.Fatalf("Lost closed: %v %v", r.leases[0].Err(), r.leases[1].Err())
			default:
			}
			for i, l := range r.leases {
				if _, err := l.GuardedWrite(ctx, &zk.CheckVersionRequest{Path: l.Path(), Version: -1}); err != nil {
					t.Errorf("guarded write through lease %d: %v", i, err)
				}
			}
			if err := release(); err != nil {
				t.Errorf("Release: %v", err)
			}
		}
		if _, err := ml.Acquire(ctx); errors.Is(err, multilock.ErrBusy) {
			t.Errorf("MultiLock still busy after Release: %v", err)
		} else if err == nil {
			_ = ml.Release(ctx)
		}
		waitFor(t, 10*time.Second, "no node left", func() bool {
			return len(children(zc, pa)) == 0 && len(children(zc, pb)) == 0
		})
		for _, s := range []*conn.Session{sa, sb} {
			noWatchesLeft(t, f, s, 5*time.Second, "session")
		}
		if !eventually(5*time.Second, func() bool { return runtime.NumGoroutine() <= g0 }) {
			t.Errorf("goroutines %d, were %d", runtime.NumGoroutine(), g0)
		}
	})
}

// TestMultiLockRevokedHandoffLockNotPassedOn: under WithLocalHandoff "a
// revoke request seen on the node ... ends the handoff in the process on
// it: the next release deletes the node, so whoever asked enters after the
// contenders queued before it", also when the holder is a MultiLock's
// grant. A MultiLock over a mutex and a semaphore mutex (both revocable
// handoff handles of session S) holds; G2 (another such mutex handle of S)
// waits in the process, C (another session) queues on the mutex and
// revokes the MultiLock's mutex node, whose Revoked was called. After the
// MultiLock's release C must enter before G2, and the MultiLock's Lost be
// closed.
func TestMultiLockRevokedHandoffLockNotPassedOn(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	s, sC := f.Session(), f.Session()
	pa, pb := f.Path("mlrev/a"), f.Path("mlrev/b")
	opts := []lock.Option{lock.WithLocalHandoff(3, 0), lock.WithRevocable()}
	ma, _ := mutex.New(s, pa, opts...)
	sb, _ := semaphoremutex.New(s, pb, opts...)
	ml, err := multilock.New(ma, sb)
	require.NoError(t, err)
	ls, err := ml.Acquire(ctx)
	require.NoError(t, err)
	la := ls[0]
	require.Equal(t, pa, zkpath.Parent(la.Path()), "leases in path order")
	revA := la.Revoked()
	m2, _ := mutex.New(s, pa, opts...)
	g2 := hold(ctx, m2)
	mC, _ := mutex.New(sC, pa, lock.WithRevocable())
	c := hold(ctx, mC)
	waitFor(t, 10*time.Second, "C queued", func() bool { return countNodes(f.Raw(), pa) >= 2 })
	require.Equal(t, 2, countNodes(f.Raw(), pa), "G2 queued a node of its own: %v", nodes{f.Raw(), pa})
	require.NoError(t, lock.Revoke(ctx, sC, la.Path()), "revoke")
	recv(t, revA, 5*time.Second, "the MultiLock's mutex lease: Revoked never closed")
	require.NoError(t, ml.Release(ctx))
	require.True(t, closesWithin(ml.Lost(), time.Second), "the MultiLock's Lost open after its release")
	askerFirst(t, c, g2)
}

// TestMultiLockOneLockThroughTwoAddressListsKeepsDeadline: multilock.New
// refuses "two on the same full path and ensemble"; an ensemble reached
// through two address lists (a proxy's and the servers') is not known as
// one. Whether New refuses such a pair or not, one ctx "bounds the whole
// acquisition, rollback included" and Acquire returns "at most 100 ms after
// ctx ends ... leaving nothing behind". A MultiLock over one mutex path
// through a proxied session and a direct one: if New takes it, its
// Acquire queues behind itself; the proxy is blackholed once both nodes
// exist. Acquire must fail within 1.5 s + 150 ms, and once the proxy
// heals no node and no watch (gauges) is left.
func TestMultiLockOneLockThroughTwoAddressListsKeepsDeadline(t *testing.T) {
	f, ctx := setUp(t, 45*time.Second)
	path := f.Path("mladdr/m")
	recP, recD := &metricsRec{}, &metricsRec{}
	px, sp := f.ProxiedSession(conn.WithSessionTimeout(20*time.Second), conn.WithMetrics(recP.Hooks()))
	sd := f.Session(conn.WithMetrics(recD.Hooks()))
	a, _ := mutex.New(sp, path)
	b, _ := mutex.New(sd, path)
	ml, err := multilock.New(a, b)
	if err != nil {
		require.ErrorIs(t, err, conn.ErrInvalidArgument)
		t.Logf("New refused the pair: %v", err)
		return
	}
	go func() {
		waitFor(t, 10*time.Second, "both nodes queued", func() bool { return countNodes(f.Raw(), path) == 2 })
		px.Blackhole()
	}()
	d, err := timed(ctx, 1500*time.Millisecond, func(ctx context.Context) error { _, err := ml.Acquire(ctx); return err })
	t.Logf("Acquire: %v after %v", err, d)
	require.Error(t, err, "a MultiLock over one lock twice was granted")
	if d > 1650*time.Millisecond {
		t.Errorf("Acquire returned %v after a 1.5 s deadline", d)
	}
	px.Heal()
	if !eventually(15*time.Second, func() bool { return countNodes(f.Raw(), path) == 0 }) {
		t.Errorf("nodes left: %v", nodes{f.Raw(), path})
	}
	recP.gaugeDrains(t, 5*time.Second)
	recD.gaugeDrains(t, 5*time.Second)
}
