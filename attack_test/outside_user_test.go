package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// The attacks of an outside user who reads only the docs (README, docs/,
// go doc) and combines features, faults and bystanders.

// TestGuardedWriteIntoSiblingLockNode_FailsLetsWaiterIn: docs/safety.md, guarantee 1: "No
// write into a holder's node by anyone but the holder's own release admits
// a waiter"; "Writing into your own lock node": Session.Set refuses any node
// named as a lock's contender, "and GuardedWrite refuses a write into the
// grant's own node". One session holds two mutexes, /a and /b; another
// session waits behind /b. The holder of /a writes, through /a's
// GuardedWrite, into /b's node (a node of its own session, sealed, so the
// server lets it). The waiter must stay out while /b's holder holds.
// What happens: GuardedWrite refuses only its own grant's node; the write
// into /b's node is applied (nil error) and the waiter behind /b takes it
// as /b's release: it is granted while /b's holder still holds (its Err nil,
// its GuardedWrite passes). Two holders, every run.
func TestGuardedWriteIntoSiblingLockNode_FailsLetsWaiterIn(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	s := f.Session()
	ma, err := mutex.New(s, f.Path("sib/a"))
	require.NoError(t, err)
	mb, err := mutex.New(s, f.Path("sib/b"))
	require.NoError(t, err)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	w := hold(ctx, newLocker(t, "mutex", f.Session(), f.Path("sib/b"), 0))
	waitFor(t, 10*time.Second, "the waiter watches /b's holder", func() bool { return watched(f, 0, lb.Path()) })

	_, gwErr := la.GuardedWrite(ctx, &zk.SetDataRequest{Path: lb.Path(), Data: []byte("x"), Version: -1})
	t.Logf("GuardedWrite of /a's lease into /b's node: %v", gwErr)
	if _, ok := w.granted(t, 2*time.Second, "waiter"); ok {
		t.Errorf("the waiter on /b was granted while /b's holder holds (its Err: %v; its GuardedWrite: %v)",
			lb.Err(), func() error { _, err := lb.GuardedWrite(ctx); return err }())
	}
	require.NoError(t, mb.Release(ctx))
	require.NoError(t, ma.Release(ctx))
}

// TestMultiLockLeaseWritesIntoItsOtherLease_FailsLetsWaiterIn: the same through a MultiLock
// over a mutex and a semaphore mutex (mixed recipes) on one session: the
// first lease's GuardedWrite sets the data of the second lease's node while
// another session waits behind it on the semaphore mutex. The waiter must
// stay out while the MultiLock holds. What happens: the write is applied
// and the semaphore mutex's waiter is granted while the MultiLock still
// holds it (the lease's Err nil). Two holders, every run.
func TestMultiLockLeaseWritesIntoItsOtherLease_FailsLetsWaiterIn(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	s := f.Session()
	m, err := mutex.New(s, f.Path("ml/a"))
	require.NoError(t, err)
	sm, err := semaphoremutex.New(s, f.Path("ml/b"))
	require.NoError(t, err)
	ml, err := multilock.New(sm, m)
	require.NoError(t, err)
	ls, err := ml.Acquire(ctx)
	require.NoError(t, err)
	require.Len(t, ls, 2)
	la, lb := ls[0], ls[1] // path order: /ml/a (mutex), then /ml/b (semaphore mutex)
	w := hold(ctx, newLocker(t, "semaphoremutex", f.Session(), f.Path("ml/b"), 0))
	waitFor(t, 10*time.Second, "the waiter watches the semaphore mutex's holder", func() bool {
		return len(watchesUnder(f, 0, f.Path("ml/b"))) > 0
	})
	_, gwErr := la.GuardedWrite(ctx, &zk.SetDataRequest{Path: lb.Path(), Data: []byte("x"), Version: -1})
	t.Logf("GuardedWrite of the mutex lease into %s: %v", lb.Path(), gwErr)
	if _, ok := w.granted(t, 2*time.Second, "waiter"); ok {
		t.Errorf("the semaphore mutex waiter was granted while the MultiLock holds it (lease Err: %v)", lb.Err())
	}
	require.NoError(t, ml.Release(ctx))
}

// TestDowngradedReaderWritesIntoKeptWriteNode: rwlock's doc: "If a writer
// is queued between our two nodes, the write node is kept until the read
// lock is released"; the kept write node keeps the queued writer out. The
// downgraded reader's GuardedWrite sets the data of the kept write node (a
// node of its own session). The queued writer must not be let in while the
// reader holds.
func TestDowngradedReaderWritesIntoKeptWriteNode(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	s := f.Session()
	path := f.Path("dgw/rw")
	rw := newRW(t, s, path)
	wl, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	w2 := hold(ctx, newRW(t, f.Session(), path).WriteLock())
	waitFor(t, 10*time.Second, "the writer waits on our write node", func() bool { return watched(f, 0, wl.Path()) })
	rl, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	for _, stage := range []string{"holding both", "write released, node kept"} {
		if stage != "holding both" {
			require.NoError(t, rw.WriteLock().Release(ctx))
		}
		_, gwErr := rl.GuardedWrite(ctx, &zk.SetDataRequest{Path: wl.Path(), Data: []byte(stage), Version: -1})
		t.Logf("%s: the read lease's GuardedWrite into the write node: %v", stage, gwErr)
		if _, ok := w2.granted(t, 2*time.Second, "writer"); ok {
			t.Fatalf("%s: the queued writer was granted while our read lock holds (read Err %v)", stage, rl.Err())
		}
	}
	require.NoError(t, rw.ReadLock().Release(ctx))
	w2.wait(t, 10*time.Second, "writer after the read release")
}

// TestOwnSessionDeleteOfHeldNode: lock's Lease.Lost: "closed when ... someone
// else deleted its node"; safety.md: "a third party that deletes a holder's
// node lets the next waiter in, and the holder is told (Lost)", and "under
// WithLocalHandoff the node is not handed on once its deletion is seen".
// Here the "third party" is a plain Session.Delete through the holder's own
// Session (which Set would refuse, Delete does not), with a second
// goroutine of the process waiting locally (it sets the watch) and a waiter
// of another session. The holder must be told (Lost closes, GuardedWrite
// fails with ErrLeaseLost, one LockLost node_deleted), and the local waiter
// must not be handed the deleted node while the other session holds.
func TestOwnSessionDeleteOfHeldNode(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	rec := &metricsRec{}
	s := f.Session(conn.WithMetrics(rec.Hooks()))
	path := f.Path("owndel/m")
	m, err := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	l1, err := m.Acquire(ctx)
	require.NoError(t, err)
	fe1 := fenceOf(t, ctx, l1)
	local := hold(ctx, m) // a second goroutine of this process: waits locally
	other := hold(ctx, newLocker(t, "mutex", f.Session(), path, 0))
	waitFor(t, 10*time.Second, "the holder's node is watched", func() bool { return watched(f, 0, l1.Path()) })

	require.NoError(t, s.Delete(ctx, l1.Path(), -1), "Session.Delete of our own held node")
	if !closesWithin(l1.Lost(), 5*time.Second) {
		t.Fatalf("the holder was not told: Lost still open 5 s after its node was deleted (Err %v)", l1.Err())
	}
	_, err = l1.GuardedWrite(ctx)
	require.ErrorIs(t, err, conn.ErrLeaseLost, "GuardedWrite after the delete")
	ol := other.wait(t, 10*time.Second, "the other session, next in the queue")
	require.NoError(t, m.Release(ctx), "release after loss is nil")
	if ll, ok := local.granted(t, 2*time.Second, "local waiter"); ok {
		fe := fenceOf(t, ctx, ll)
		t.Errorf("the local waiter was granted (node %s, fence %v after %v) while the other session holds %s (Err %v)",
			ll.Path(), fe, fe1, ol.Path(), ol.Err())
	}
	require.NoError(t, other.release())
	local.wait(t, 10*time.Second, "local waiter after the other session")
	rec.expect(t, 1, metrics.LockLost, "mutex", metrics.CauseNodeDeleted, "losses node_deleted")
	rec.expect(t, 0, metrics.LockHandoff, "mutex", "", "handoffs of the deleted node")
}

// TestGuardedWriteAfterEveryKindOfEndSaysLost: conn's GuardedWrite: "A lost
// lease fails with ErrLeaseLost"; ErrLeaseLost: "the lease ended (its epoch
// ended, its node was deleted by someone else, or it was released)". Each
// way a lease ends, combined across recipes: a rwlock write lease whose
// node is kept after a downgrade, a semaphore lease returned, a MultiLock's
// leases after Release, a leader's lease after Resign, a lease whose
// session was closed, a lease whose epoch expired, and a lease under
// WithSuspendedAsLost while the connection is blackholed (which must not
// wait for the connection). Each GuardedWrite must fail with an error
// matching conn.ErrLeaseLost, within 2 s.
func TestGuardedWriteAfterEveryKindOfEndSaysLost(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 90*time.Second)
	res := f.Path("gwlost-res")
	f.Register(res, nil)
	write := func(l *conn.Lease) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := l.GuardedWrite(ctx, &zk.SetDataRequest{Path: res, Data: []byte("stale"), Version: -1})
			return err
		}
	}
	check := func(t *testing.T, what string, l *conn.Lease) {
		t.Helper()
		d, err := timed(ctx, 2*time.Second, write(l))
		if !errors.Is(err, conn.ErrLeaseLost) {
			t.Errorf("%s: GuardedWrite after %v: %v, want an error matching conn.ErrLeaseLost", what, d, err)
		}
		if string(f.Data(res)) == "stale" {
			t.Errorf("%s: the stale write was applied", what)
		}
	}
	t.Run("downgrade-kept-write-node", func(t *testing.T) {
		f := f.In(t)
		path := f.Path("gwlost/rw")
		rw := newRW(t, f.Session(), path)
		wl, err := rw.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		w2 := hold(ctx, newRW(t, f.Session(), path).WriteLock())
		waitFor(t, 10*time.Second, "writer queued", func() bool { return watched(f, 0, wl.Path()) })
		_, err = rw.ReadLock().Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, rw.WriteLock().Release(ctx))
		check(t, "write lease released, node kept", wl)
		require.NoError(t, rw.ReadLock().Release(ctx))
		w2.wait(t, 10*time.Second, "writer")
	})
	t.Run("semaphore-returned", func(t *testing.T) {
		f := f.In(t)
		sem, err := semaphoremutex.NewSemaphore(f.Session(), f.Path("gwlost/sem"), 2)
		require.NoError(t, err)
		l1, err := sem.Acquire(ctx)
		require.NoError(t, err)
		l2, err := sem.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, sem.ReturnLease(ctx, l1))
		check(t, "semaphore lease returned", l1)
		require.NoError(t, sem.ReturnLease(ctx, l2))
	})
	t.Run("multilock-released", func(t *testing.T) {
		f := f.In(t)
		s := f.Session()
		m, _ := mutex.New(s, f.Path("gwlost/ma"))
		rw := newRW(t, s, f.Path("gwlost/mrw"))
		sm, _ := semaphoremutex.New(s, f.Path("gwlost/msm"), lock.WithLocalHandoff(2, 0))
		ml, err := multilock.New(m, rw.ReadLock(), sm)
		require.NoError(t, err)
		ls, err := ml.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, ml.Release(ctx))
		for _, l := range ls {
			check(t, "multilock released: "+l.Path(), l)
		}
	})
	t.Run("leader-resigned", func(t *testing.T) {
		f := f.In(t)
		e := electionOf(t, f.Session(), f.Path("gwlost/l"), "a")
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		require.NoError(t, e.Resign(ctx))
		check(t, "leader resigned", l)
	})
	t.Run("session-closed", func(t *testing.T) {
		f := f.In(t)
		s := f.Session()
		m, _ := mutex.New(s, f.Path("gwlost/closed"))
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		check(t, "session closed", l)
	})
	t.Run("epoch-expired", func(t *testing.T) {
		f := f.In(t)
		s := f.Session()
		m, _ := mutex.New(s, f.Path("gwlost/expired"))
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		f.Expire(ctx, l.Epoch())
		check(t, "epoch expired", l)
	})
	t.Run("suspended-as-lost-blackholed", func(t *testing.T) {
		f := f.In(t)
		px, s := f.ProxiedSession(conn.WithSuspendedAsLost())
		m, _ := mutex.New(s, f.Path("gwlost/susp"))
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		suspend(t, px, s)
		check(t, "suspended as lost, blackholed", l)
		px.Heal()
	})
}

// electionOf is a leader.Election on path in s.
func electionOf(t *testing.T, s *conn.Session, path, id string) *leader.Election {
	t.Helper()
	e, err := leader.New(s, path, id)
	require.NoError(t, err)
	return e
}
