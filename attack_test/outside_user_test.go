package attack_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
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

// TestGuardedWriteIntoSiblingLockNodeRefused: docs/safety.md, guarantee 1: "No
// write into a holder's node by anyone but the holder's own release admits
// a waiter"; "Writing into your own lock node": Session.Set refuses any node
// named as a lock's contender, "and GuardedWrite refuses a write into the
// grant's own node". One session holds two mutexes, /a and /b; another
// session waits behind /b. The holder of /a writes, through /a's
// GuardedWrite, into /b's node (a node of its own session, sealed, so the
// server would let it). GuardedWrite refuses it (conn.ErrInvalidArgument)
// and the waiter stays out while /b's holder holds.
func TestGuardedWriteIntoSiblingLockNodeRefused(t *testing.T) {
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
	require.ErrorIs(t, gwErr, conn.ErrInvalidArgument, "a guarded write may not set a lock node")
	if _, ok := w.granted(t, 2*time.Second, "waiter"); ok {
		t.Errorf("the waiter on /b was granted while /b's holder holds (its Err: %v; its GuardedWrite: %v)",
			lb.Err(), func() error { _, err := lb.GuardedWrite(ctx); return err }())
	}
	require.NoError(t, mb.Release(ctx))
	require.NoError(t, ma.Release(ctx))
}

// TestMultiLockLeaseWriteIntoItsOtherLeaseRefused: the same through a MultiLock
// over a mutex and a semaphore mutex (mixed recipes) on one session: the
// first lease's GuardedWrite sets the data of the second lease's node while
// another session waits behind it on the semaphore mutex. The waiter must
// stay out while the MultiLock holds: the write is refused
// (conn.ErrInvalidArgument).
func TestMultiLockLeaseWriteIntoItsOtherLeaseRefused(t *testing.T) {
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
	require.ErrorIs(t, gwErr, conn.ErrInvalidArgument, "a guarded write may not set a lock node")
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

// TestWriteLeaseWriteIntoItsDowngradeReadNodeRefused: rwlock's doc: while a writer
// holds the lock "no other contender of any process on the path does"; a
// downgrade leaves the goroutine holding both sides. The holder of both
// writes, through the write lease's GuardedWrite, into its own read node (a
// sibling of the write node, which GuardedWrite does not call its own),
// while a writer of another session waits behind that read node. The
// waiting writer must stay out while we hold both sides: the write is
// refused (conn.ErrInvalidArgument).
func TestWriteLeaseWriteIntoItsDowngradeReadNodeRefused(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	path := f.Path("wdr/rw")
	rw := newRW(t, f.Session(), path)
	wl, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	rl, err := rw.ReadLock().Acquire(ctx) // downgrade: granted at once
	require.NoError(t, err)
	w2 := hold(ctx, newRW(t, f.Session(), path).WriteLock())
	var readNode string
	waitFor(t, 10*time.Second, "the writer queued behind our nodes", func() bool {
		return len(children(f.Raw(), path)) == 3
	})
	for _, ch := range sortedBySeq(f.Raw(), path) {
		if seqOf(ch) == seqOf(wl.Path())+1 {
			readNode = path + "/" + ch
		}
	}
	require.NotEmpty(t, readNode, "our read node after the write node: %v", nodes{f.Raw(), path})
	waitFor(t, 10*time.Second, "the writer watches our read node", func() bool { return watched(f, 0, readNode) })
	_, gwErr := wl.GuardedWrite(ctx, &zk.SetDataRequest{Path: readNode, Data: []byte("x"), Version: -1})
	t.Logf("the write lease's GuardedWrite into our read node %s (read lease on %s): %v", readNode, rl.Path(), gwErr)
	require.ErrorIs(t, gwErr, conn.ErrInvalidArgument, "a guarded write may not set a lock node")
	if _, ok := w2.granted(t, 2*time.Second, "writer"); ok {
		t.Errorf("the queued writer was granted while we hold the write and read locks (write Err %v, read Err %v)", wl.Err(), rl.Err())
	}
	require.NoError(t, rw.ReadLock().Release(ctx))
	require.NoError(t, rw.WriteLock().Release(ctx))
}

// TestObserveCancelledWhileBlackholedLeavesNoWatch: leader's Observe: "It
// keeps one watch on the path, removed from the server when ctx ends";
// safety.md for waiters: "after a reconnect the removed watch does not come
// back". Observe is cancelled while the connection is blackholed (the
// session survives: healed within the quorum timer's window), then once
// more after a forced expiry (the Observe of the new epoch). After each,
// the session must keep no watch under the election path on the server
// (mntr's zk_watch_count: the leader holds without watching), and the Watches gauge must come back to 0.
func TestObserveCancelledWhileBlackholedLeavesNoWatch(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	path := f.Path("obsbh/l")
	ld := electionOf(t, f.Session(), path, "leader")
	_, err := ld.Campaign(ctx)
	require.NoError(t, err)
	rec := &metricsRec{}
	px, s := f.ProxiedSession(conn.WithSessionTimeout(6*time.Second), conn.WithMetrics(rec.Hooks()))
	obs := electionOf(t, s, path, "observer")

	t.Run("cancel-while-blackholed", func(t *testing.T) {
		sid := epochOf(t, s).SessionID()
		octx, cancel := context.WithCancel(ctx)
		ch := obs.Observe(octx)
		recv(t, ch, 5*time.Second, "Observe gave no first value")
		waitFor(t, 5*time.Second, "Observe's watch on the server", func() bool { return serverWatches(t, f) == 1 })
		px.Blackhole()
		cancel()
		if !closesWithin(ch, 2*time.Second) {
			t.Errorf("Observe's channel still open 2 s after its ctx was cancelled (blackholed)")
		}
		px.Heal()
		waitFor(t, 10*time.Second, "reconnected", func() bool { return s.State() == conn.Reconnected })
		require.Equal(t, sid, epochOf(t, s).SessionID(), "the session survived the blackhole")
		if !eventually(3*time.Second, func() bool { return serverWatches(t, f) == 0 }) {
			t.Errorf("the server keeps %d watches after Observe was cancelled while blackholed (wchc of our session: %v)", serverWatches(t, f), sessionWatches(t, f, 0, sid))
		}
		rec.gaugeDrains(t, 3*time.Second)
	})
	t.Run("cancel-after-expiry", func(t *testing.T) {
		octx, cancel := context.WithCancel(ctx)
		ch := obs.Observe(octx)
		recv(t, ch, 5*time.Second, "Observe gave no first value")
		f.Expire(ctx, epochOf(t, s))
		waitFor(t, 10*time.Second, "a new epoch", func() bool { return s.State() == conn.Connected })
		sid := epochOf(t, s).SessionID()
		waitFor(t, 5*time.Second, "Observe's watch in the new epoch", func() bool { return serverWatches(t, f) == 1 })
		cancel()
		if !closesWithin(ch, 2*time.Second) {
			t.Errorf("Observe's channel still open 2 s after its ctx was cancelled")
		}
		if !eventually(3*time.Second, func() bool { return serverWatches(t, f) == 0 }) {
			t.Errorf("the server keeps %d watches after Observe was cancelled (session %x)", serverWatches(t, f), sid)
		}
		rec.gaugeDrains(t, 3*time.Second)
	})
}

// serverWatches is server 0's zk_watch_count (mntr): every watch of every
// session (wchc does not list the watch Observe sets).
func serverWatches(t *testing.T, f *fixture) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	m, err := f.Mntr(ctx, 0)
	require.NoError(t, err, "mntr")
	n, err := strconv.Atoi(m["zk_watch_count"])
	require.NoError(t, err, "zk_watch_count %q", m["zk_watch_count"])
	return n
}

// leaderRec adds the Leader hook to a metricsRec.
type leaderRec struct {
	*metricsRec
	starts, ends atomic.Int64
}

func (r *leaderRec) Hooks() metrics.Hooks {
	h := r.metricsRec.Hooks()
	h.Leader = func(l metrics.Leader) {
		if l.Leading {
			r.starts.Add(1)
		} else {
			r.ends.Add(1)
		}
	}
	return h
}

// TestLeaderRunRequeueExpiryMetrics: metrics.Leader: "the start (Leading)
// or the end (with the term's Duration) of a leader term of Run";
// metrics.LockHold/LockLost: "A grant ends in one LockHold or one LockLost,
// never both"; LockLost: "once per lease". Run with WithRequeue leads, its
// session is expired (term 1 lost: cause expiry), it requeues and leads
// again (term 2), a bystander deletes its node (term 3 starts after term 2
// is lost: cause node_deleted), then Run's ctx ends (term 3 resigned: a
// hold). Each term must be one start and one end, and each grant one hold
// or one loss.
func TestLeaderRunRequeueExpiryMetrics(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	rec := &leaderRec{metricsRec: &metricsRec{}}
	s := f.Session(conn.WithMetrics(rec.Hooks()))
	path := f.Path("runm/l")
	e, err := leader.New(s, path, "me", leader.WithRequeue())
	require.NoError(t, err)
	terms := make(chan *conn.Lease, 8)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(rctx, func(ctx context.Context, l *conn.Lease) error {
			terms <- l
			<-ctx.Done()
			return nil
		})
	}()
	l1 := recv(t, terms, 10*time.Second, "term 1 never began")
	f.Expire(ctx, l1.Epoch())
	l2 := recv(t, terms, 15*time.Second, "term 2 never began after the expiry")
	_, err = f.Raw().Set(l2.Path(), []byte("x"), -1) // no effect expected: sealed? an election's node
	t.Logf("bystander set on the leader's node: %v", err)
	require.NoError(t, f.Raw().Delete(l2.Path(), -1))
	l3 := recv(t, terms, 15*time.Second, "term 3 never began after the bystander's delete")
	require.NotEqual(t, l2.Path(), l3.Path())
	cancel()
	err = recv(t, done, 5*time.Second, "Run did not return after its ctx ended")
	t.Logf("Run: %v", err)
	if got := [2]int64{rec.starts.Load(), rec.ends.Load()}; got != [2]int64{3, 3} {
		t.Errorf("leader terms reported: %d starts, %d ends, want 3 and 3", got[0], got[1])
	}
	rec.expect(t, 1, metrics.LockLost, "leader", metrics.CauseExpiry, "leader losses by expiry")
	rec.expect(t, 1, metrics.LockLost, "leader", metrics.CauseNodeDeleted, "leader losses by the bystander's delete")
	rec.expect(t, 2, metrics.LockLost, "leader", "", "leader losses")
	rec.expect(t, 1, metrics.LockHold, "leader", "", "leader holds (term 3, resigned)")
	rec.expect(t, 3, metrics.LockWait, "leader", metrics.OutcomeGranted, "campaigns granted")
}

// TestCloseDuringAcquireAcrossHandoffAndSharedListing: conn's ErrClosed "is
// returned by every call made after Close"; lock's Acquire "returns at most
// 100 ms after ctx ends", with a session lost while waiting "not an error:
// Acquire starts over in the next"; metrics.LockLost cause closed: "the
// session was closed while the lease was held". One session: goroutine 1
// holds a local-handoff mutex; goroutine 2 waits on the same handle (a local
// waiter); goroutine 3 waits through a plain handle on the same path (the
// shared listing), and goroutine 4 waits on a multilock over a semaphore
// mutex held by another session and a mutex. Every ctx is without deadline.
// Close must end every wait within 2 s with an error matching
// conn.ErrClosed, leave no node of ours, report the holder's loss as
// closed (not a hold), and the waits as not granted.
func TestCloseDuringAcquireAcrossHandoffAndSharedListing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rec := &metricsRec{}
	s := f.Session(conn.WithMetrics(rec.Hooks()))
	path := f.Path("closeacq/m")
	hm, err := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	pm, err := mutex.New(s, path)
	require.NoError(t, err)
	l1, err := hm.Acquire(ctx)
	require.NoError(t, err)
	_ = l1.Lost()
	other := f.Session()
	osm, _ := semaphoremutex.New(other, f.Path("closeacq/sm"))
	_, err = osm.Acquire(ctx)
	require.NoError(t, err)
	sm, _ := semaphoremutex.New(s, f.Path("closeacq/sm"))
	mm, _ := mutex.New(s, f.Path("closeacq/a"))
	ml, err := multilock.New(sm, mm)
	require.NoError(t, err)
	errs := make(chan error, 3)
	go func() { _, err := hm.Acquire(ctx); errs <- err }()
	go func() { _, err := pm.Acquire(ctx); errs <- err }()
	go func() { _, err := ml.Acquire(ctx); errs <- err }()
	waitFor(t, 10*time.Second, "the plain handle and the multilock queued", func() bool {
		return len(children(f.Raw(), path)) == 2 && len(watchesUnder(f, 0, f.Path("closeacq/sm"))) > 0
	})
	time.Sleep(200 * time.Millisecond) // the local waiter has no node to wait for: give it time to queue
	require.NoError(t, s.Close())
	for i := 0; i < 3; i++ {
		err, ok := within(errs, 2*time.Second)
		if !ok {
			t.Fatalf("an Acquire still waits 2 s after Close (%d returned)", i)
		}
		if !errors.Is(err, conn.ErrClosed) {
			t.Errorf("Acquire after Close: %v, want an error matching conn.ErrClosed", err)
		}
	}
	if !closesWithin(l1.Lost(), time.Second) {
		t.Errorf("the holder's Lost still open after Close")
	}
	if n := countNodes(f.Raw(), f.Path("closeacq")); n != 1 { // the other session's semaphore mutex
		t.Errorf("%d lock nodes under the paths, want 1 (the other session's): %v", n, nodes{f.Raw(), path})
	}
	// Two mutex grants held at Close: goroutine 1's, and the multilock's
	// mutex on /closeacq/a (taken first: path order) while it waits for
	// the semaphore mutex.
	rec.expect(t, 2, metrics.LockLost, "mutex", metrics.CauseClosed, "the holders' losses, closed")
	rec.expect(t, 0, metrics.LockHold, "", "", "holds")
	rec.expect(t, 0, metrics.LockHandoff, "", "", "handoffs")
	rec.expect(t, 2, metrics.LockWait, "mutex", metrics.OutcomeGranted, "waits granted")
	if n := rec.count(metrics.LockWait, "", "") - rec.count(metrics.LockWait, "", metrics.OutcomeGranted); n < 3 {
		t.Errorf("waits not granted reported: %d, want at least 3 (two mutex waits, the multilock's semaphore mutex): %s", n, rec.dump())
	}
}

// TestEveryCallKeepsItsDeadlineWhileBlackholed: lock's contract: "ctx bounds
// the wait"; Acquire and TryAcquire "return at most 100 ms after ctx ends";
// conn's node operations and the recipes' other calls take a ctx, and
// Release/Resign/ReturnLease say "lock.ErrReleasePending when the delete is
// unconfirmed" rather than waiting. With the connection blackholed (the
// session alive: T = 10 s) every call below, all at once, each with a
// 300 ms deadline, must return within 1 s: releases of every recipe
// (a MultiLock over a local-handoff mutex and an rwlock's read side
// included), a leader's Resign, Revoke, the snapshots, the Session's node
// operations, a first Fence, a GuardedWrite, and the Acquire of a local
// waiter queued behind a local-handoff holder.
func TestEveryCallKeepsItsDeadlineWhileBlackholed(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	px, s := f.ProxiedSession(conn.WithSessionTimeout(10 * time.Second))
	root := f.Path("bhdl")
	f.Register(root, nil)
	other := f.Session()
	rv, _ := mutex.New(other, root+"/revocable", lock.WithRevocable())
	rvl, err := rv.Acquire(ctx)
	require.NoError(t, err)

	start := make(chan struct{})
	type result struct {
		name string
		d    time.Duration
		err  error
	}
	results := make(chan result, 64)
	var calls []string
	// run starts name on a goroutine of its own: prep (before the
	// blackhole) returns the call made after it, on the same goroutine.
	run := func(name string, prep func() func(context.Context) error) {
		calls = append(calls, name)
		ready := make(chan func(context.Context) error)
		go func() {
			call := prep()
			ready <- call
			<-start
			d, err := timed(ctx, 300*time.Millisecond, call)
			results <- result{name, d, err}
		}()
		require.NotNil(t, <-ready, name)
	}
	acq := func(lk interface {
		Acquire(context.Context) (*conn.Lease, error)
	}) *conn.Lease {
		l, err := lk.Acquire(ctx)
		require.NoError(t, err)
		return l
	}
	hm, _ := mutex.New(s, root+"/handoff", lock.WithLocalHandoff(3, 0))
	run("mutex.Release (local handoff, a local waiter behind)", func() func(context.Context) error {
		acq(hm)
		return hm.Release
	})
	run("mutex.Acquire (local waiter)", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := hm.Acquire(ctx); return err }
	})
	run("rwlock read Release", func() func(context.Context) error {
		rw := newRW(t, s, root+"/rw")
		acq(rw.ReadLock())
		return rw.ReadLock().Release
	})
	run("multilock.Release", func() func(context.Context) error {
		a, _ := mutex.New(s, root+"/ml-a", lock.WithLocalHandoff(2, 0))
		b := newRW(t, s, root+"/ml-b")
		ml, err := multilock.New(a, b.ReadLock())
		require.NoError(t, err)
		_, err = ml.Acquire(ctx)
		require.NoError(t, err)
		return ml.Release
	})
	run("semaphore.ReturnLease", func() func(context.Context) error {
		sem, _ := semaphoremutex.NewSemaphore(s, root+"/sem", 2)
		l := acq(sem)
		return func(ctx context.Context) error { return sem.ReturnLease(ctx, l) }
	})
	run("semaphoremutex.Release", func() func(context.Context) error {
		sm, _ := semaphoremutex.New(s, root+"/sm", lock.WithLocalHandoff(2, 0))
		acq(sm)
		return sm.Release
	})
	e := electionOf(t, s, root+"/l", "me")
	run("leader.Resign", func() func(context.Context) error {
		_, err := e.Campaign(ctx)
		require.NoError(t, err)
		return e.Resign
	})
	run("leader.Leader", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := e.Leader(ctx); return err }
	})
	run("leader.Participants", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := e.Participants(ctx); return err }
	})
	run("lock.Revoke", func() func(context.Context) error {
		return func(ctx context.Context) error { return lock.Revoke(ctx, s, rvl.Path()) }
	})
	run("mutex.TryAcquire", func() func(context.Context) error {
		m, _ := mutex.New(s, root+"/revocable")
		return func(ctx context.Context) error { _, _, err := m.TryAcquire(ctx); return err }
	})
	run("first Fence", func() func(context.Context) error {
		m, _ := mutex.New(s, root+"/fence")
		l := acq(m)
		return func(ctx context.Context) error { _, err := l.Fence(ctx); return err }
	})
	run("GuardedWrite", func() func(context.Context) error {
		m, _ := mutex.New(s, root+"/gw")
		l := acq(m)
		return func(ctx context.Context) error { return guardedSet(ctx, l, root, []byte("x"), -1) }
	})
	run("Session.Get", func() func(context.Context) error {
		return func(ctx context.Context) error { _, _, err := s.Get(ctx, root); return err }
	})
	run("Session.Set", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := s.Set(ctx, root, []byte("y"), -1); return err }
	})
	run("Session.Create", func() func(context.Context) error {
		return func(ctx context.Context) error { _, err := s.Create(ctx, root+"/c", nil, 0, zkWorld); return err }
	})
	run("Session.Delete", func() func(context.Context) error {
		return func(ctx context.Context) error { return s.Delete(ctx, root+"/nothing", -1) }
	})
	run("Session.Children", func() func(context.Context) error {
		return func(ctx context.Context) error { _, _, err := s.Children(ctx, root); return err }
	})

	px.Blackhole()
	close(start)
	for range calls {
		r, ok := within(results, 5*time.Second)
		if !ok {
			t.Fatalf("a call still running 5 s after its 300 ms deadline")
		}
		t.Logf("%s: %v: %v", r.name, r.d.Round(time.Millisecond), r.err)
		if r.d > time.Second {
			t.Errorf("%s returned %v after its start, 300 ms deadline: %v", r.name, r.d.Round(time.Millisecond), r.err)
		}
	}
	px.Heal()
}

// TestExclusiveNodeWrittenByItsOwnSessionIsReleased: exclusive: "Never two
// holders", and the contract of package lock, "nothing of ours is left
// behind"; Release "gives the lock up ..., deleting the lock node if it is
// still ours"; conn's Session.Set "refuses, with ErrInvalidArgument, a node
// named as a lock's, a lease's or an election's contender". exclusive's
// node is named plain "lock". The holder's own session writes into it, by
// Session.Set or through another lease's GuardedWrite, while a waiter of
// another session waits; the waiter must stay out until the release, and
// be granted after it: Release knows its node by its czxid, not only by
// the id in its data, so it deletes it and leaves no orphan.
func TestExclusiveNodeWrittenByItsOwnSessionIsReleased(t *testing.T) {
	newFixture(t).Each(t, []string{"set", "guardedwrite"}, func(t *testing.T, f *fixture, how string) {
		ctx := ctxT(t, 30*time.Second)
		s := f.Session()
		path := f.Path("xown-" + how + "/x")
		x := newLocker(t, "exclusive", s, path, 0)
		xl, err := x.Acquire(ctx)
		require.NoError(t, err)
		m, _ := mutex.New(s, f.Path("xown-"+how+"/m"))
		ml, err := m.Acquire(ctx)
		require.NoError(t, err)
		w := hold(ctx, newLocker(t, "exclusive", f.Session(), path, 1))
		waitFor(t, 10*time.Second, "the waiter watches the lock node", func() bool { return watched(f, 0, xl.Path()) })
		if how == "set" {
			_, err = s.Set(ctx, xl.Path(), []byte("mine"), -1)
			t.Logf("Session.Set on %s: %v", xl.Path(), err)
		} else {
			_, err = ml.GuardedWrite(ctx, &zk.SetDataRequest{Path: xl.Path(), Data: []byte("again"), Version: -1})
			t.Logf("GuardedWrite into %s: %v", xl.Path(), err)
		}
		w.notGranted(t, 2*time.Second, "the exclusive waiter was granted while the holder holds")
		_, err = xl.GuardedWrite(ctx)
		require.NoError(t, err, "the holder still holds")
		require.NoError(t, x.Release(ctx))
		if _, ok := w.granted(t, 5*time.Second, "waiter"); !ok {
			_, st, err := f.Raw().Get(xl.Path())
			var owner int64
			if st != nil {
				owner = st.EphemeralOwner
			}
			t.Errorf("the waiter is not granted 5 s after the holder's Release returned nil: the node %s (err %v, owner %x, holder's session %x) stays while the session lives",
				xl.Path(), err, owner, xl.Epoch().SessionID())
		}
		require.NoError(t, m.Release(ctx))
	})
}

// TestRevokedDowngradeThenExpiryMetrics: rwlock: "a revoke request to that
// node [the kept write node] reaches the read lease"; metrics: LockHold "a
// grant not lost before was released", LockLost "once per lease",
// LockRevokeRequest when "its Lease.Revoked channel was closed". A
// revocable rwlock: write, a writer of another session queues, downgrade,
// write release (the write node kept), a Revoke of the kept write node
// (the read lease's Revoked closes), then the session expires. Reported
// must be: 2 waits granted (write, read), 1 hold (the write grant), 1 loss
// by expiry (the read grant), 1 revoke request; and the queued writer gets
// the lock.
func TestRevokedDowngradeThenExpiryMetrics(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	rec := &metricsRec{}
	s := f.Session(conn.WithMetrics(rec.Hooks()))
	path := f.Path("rdx/rw")
	rw := newRW(t, s, path, lock.WithRevocable())
	wl, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	w2 := hold(ctx, newRW(t, f.Session(), path, lock.WithRevocable()).WriteLock())
	waitFor(t, 10*time.Second, "the writer queued", func() bool { return watched(f, 0, wl.Path()) })
	rl, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	revoked := rl.Revoked()
	require.NoError(t, rw.WriteLock().Release(ctx))
	require.True(t, exists(f.Raw(), wl.Path()), "the write node is kept")
	require.NoError(t, lock.Revoke(ctx, f.Session(), wl.Path()))
	recv(t, revoked, 5*time.Second, "the read lease's Revoked did not close after a revoke of the kept write node")
	w2.notGranted(t, 500*time.Millisecond, "the writer got in after a mere revoke request")
	f.Expire(ctx, rl.Epoch())
	recv(t, rl.Lost(), 5*time.Second, "the read lease's Lost after the expiry")
	w2.wait(t, 10*time.Second, "the writer after the expiry")
	require.NoError(t, rw.ReadLock().Release(ctx), "release after loss is nil")
	rec.expect(t, 2, metrics.LockWait, "rwlock", metrics.OutcomeGranted, "waits granted")
	rec.expect(t, 1, metrics.LockHold, "rwlock", "", "holds")
	rec.expect(t, 1, metrics.LockLost, "rwlock", metrics.CauseExpiry, "losses by expiry")
	rec.expect(t, 1, metrics.LockLost, "rwlock", "", "losses")
	rec.expect(t, 1, metrics.LockRevokeRequest, "rwlock", "", "revoke requests")
}

// TestRunWithRequeueReturnsOnClose: leader's WithRequeue: Run "returns
// only when its ctx ends, when the function returns a non-nil error while
// leadership was still safe, or when the resign after a safe term fails";
// conn: ErrClosed "is returned by every call made after Close". A Run with
// WithRequeue and a ctx that never ends leads; its Session is closed. The
// term is lost (Close ends the epoch), Run requeues, and its campaign can
// only fail: Run must return within 2 s, with an error matching
// conn.ErrClosed, not spin or hang. Two more participants, one Campaign
// waiting and one Observe, on the same Session, must end too.
func TestRunWithRequeueReturnsOnClose(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.Session()
	path := f.Path("rqclose/l")
	e, err := leader.New(s, path, "runner", leader.WithRequeue())
	require.NoError(t, err)
	terms := make(chan *conn.Lease, 4)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(ctx context.Context, l *conn.Lease) error {
			terms <- l
			<-ctx.Done()
			return nil
		})
	}()
	recv(t, terms, 10*time.Second, "Run never led")
	follower := electionOf(t, s, path, "follower")
	camp := make(chan error, 1)
	go func() { _, err := follower.Campaign(ctx); camp <- err }()
	waitFor(t, 5*time.Second, "the follower queued", func() bool { return len(children(f.Raw(), path)) == 2 })
	obs := electionOf(t, s, path, "observer").Observe(ctx)
	require.NoError(t, s.Close())
	err = recv(t, done, 2*time.Second, "Run with WithRequeue still running 2 s after Close")
	if !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Run after Close: %v, want an error matching conn.ErrClosed", err)
	}
	select {
	case l := <-terms:
		t.Errorf("Run led again after Close (node %s)", l.Path())
	default:
	}
	err = recv(t, camp, 2*time.Second, "the follower's Campaign still waiting 2 s after Close")
	if !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Campaign after Close: %v, want conn.ErrClosed", err)
	}
	if !closesWithin(obs, 2*time.Second) {
		t.Errorf("Observe's channel open 2 s after Close")
	}
	waitFor(t, 5*time.Second, "no election node left", func() bool { return len(children(f.Raw(), path)) == 0 })
}

// TestLocalHandoffBoundsARemoteWaiter: lock.WithLocalHandoff: "another
// process's contender waits for at most maxPasses+1 of these holds"; and
// the same for semaphoremutex ("the handles of one session and path pass
// the lease between them"). Four goroutines of session A take and release
// the lock in a loop (mutex: one handle; semaphoremutex: four handles),
// with maxPasses 2; session B queues once. Counting A's grants that began
// after B's node was created, B must be granted before A's (maxPasses+1)+1
// th such grant; the fences of every grant, B's included, must grow in
// grant order.
func TestLocalHandoffBoundsARemoteWaiter(t *testing.T) {
	newFixture(t).Each(t, []string{"mutex", "semaphoremutex"}, func(t *testing.T, f *fixture, recipe string) {
		const maxPasses = 2
		ctx := ctxT(t, 60*time.Second)
		sA := f.Session()
		path := f.Path("bound-" + recipe)
		var handles []locker
		for i := 0; i < 4; i++ {
			if recipe == "mutex" && i > 0 {
				handles = append(handles, handles[0])
				continue
			}
			var lk locker
			var err error
			if recipe == "mutex" {
				lk, err = mutex.New(sA, path, lock.WithLocalHandoff(maxPasses, 0))
			} else {
				lk, err = semaphoremutex.New(sA, path, lock.WithLocalHandoff(maxPasses, 0))
			}
			require.NoError(t, err)
			handles = append(handles, lk)
		}
		var mu sync.Mutex
		var grants []string // "A" or "B" in grant order
		var fences []conn.Fence
		var bQueued = -1 // len(grants) when B's node appeared
		granted := func(who string, l *conn.Lease) {
			fe, err := l.Fence(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: fence: %v", who, err)
				return
			}
			grants = append(grants, who)
			fences = append(fences, fe)
		}
		stop := make(chan struct{})
		wg := spawn(4, func(i int) {
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := handles[i].Acquire(ctx)
				if err != nil {
					t.Errorf("A%d: %v", i, err)
					return
				}
				granted("A", l)
				time.Sleep(2 * time.Millisecond)
				if err := handles[i].Release(ctx); err != nil {
					t.Errorf("A%d release: %v", i, err)
					return
				}
			}
		})
		time.Sleep(300 * time.Millisecond)
		b := newLocker(t, recipe, f.Session(), path, 9)
		bh := hold(ctx, b)
		waitFor(t, 10*time.Second, "B's node", func() bool {
			n := len(children(f.Raw(), path))
			if recipe == "semaphoremutex" {
				n = len(children(f.Raw(), path+"/locks"))
			}
			if n >= 2 {
				mu.Lock()
				if bQueued < 0 {
					bQueued = len(grants)
				}
				mu.Unlock()
				return true
			}
			return false
		})
		bl := bh.wait(t, 20*time.Second, "B")
		granted("B", bl)
		require.NoError(t, bh.release())
		close(stop)
		require.True(t, doneWithin(wg, 20*time.Second), "A's goroutines did not stop")
		mu.Lock()
		defer mu.Unlock()
		after := 0
		for i := bQueued; i < len(grants) && grants[i] != "B"; i++ {
			after++
		}
		t.Logf("A's grants after B queued, before B's grant: %d (grants in all %d)", after, len(grants))
		if after > maxPasses+1 {
			t.Errorf("B waited through %d of A's grants that began after it queued, want at most maxPasses+1 = %d", after, maxPasses+1)
		}
		for i := 1; i < len(fences); i++ {
			if fences[i].Compare(fences[i-1]) <= 0 {
				t.Errorf("grant %d (%s) fence %v not after grant %d (%s) fence %v", i, grants[i], fences[i], i-1, grants[i-1], fences[i-1])
			}
		}
	})
}

// TestMultiLockMixedRecipesExpiryMetrics: multilock: "Lost closes when any
// lease is lost"; Release "after a loss returns nil" for each lock;
// metrics.LockLost: "once per lease, when it learns it (... or at the
// latest its release)", and a grant ends "in one LockHold or one LockLost,
// never both". A MultiLock over a local-handoff mutex, an rwlock's write
// side, a semaphore mutex and an exclusive lock, on one session, holds;
// only one lease's Lost is watched; the session expires. The MultiLock's
// Lost must close, its Release return nil, four losses by expiry be
// reported and no hold, and another session then take the same MultiLock.
func TestMultiLockMixedRecipesExpiryMetrics(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	rec := &metricsRec{}
	mk := func(s *conn.Session) *multilock.MultiLock {
		m, _ := mutex.New(s, f.Path("mlx/a-mutex"), lock.WithLocalHandoff(2, 0))
		rw := newRW(t, s, f.Path("mlx/b-rw"))
		sm, _ := semaphoremutex.New(s, f.Path("mlx/c-sm"))
		x := newLocker(t, "exclusive", s, f.Path("mlx/d-x"), 0).(lock.Locker)
		ml, err := multilock.New(x, sm, rw.WriteLock(), m)
		require.NoError(t, err)
		return ml
	}
	s := f.Session(conn.WithMetrics(rec.Hooks()))
	ml := mk(s)
	ls, err := ml.Acquire(ctx)
	require.NoError(t, err)
	require.Len(t, ls, 4)
	_ = ls[1].Lost()
	lost := ml.Lost()
	f.Expire(ctx, ls[0].Epoch())
	recv(t, lost, 5*time.Second, "the MultiLock's Lost did not close after the expiry")
	if err := ml.Release(ctx); err != nil {
		t.Errorf("Release after the expiry: %v, want nil", err)
	}
	rec.expect(t, 4, metrics.LockLost, "", metrics.CauseExpiry, "losses by expiry")
	rec.expect(t, 4, metrics.LockLost, "", "", "losses")
	rec.expect(t, 0, metrics.LockHold, "", "", "holds")
	ml2 := mk(f.Session())
	_, err = ml2.Acquire(ctx)
	require.NoError(t, err, "another session takes the MultiLock")
	require.NoError(t, ml2.Release(ctx))
	// And the expired session's MultiLock can be taken again.
	_, err = ml.Acquire(ctx)
	require.NoError(t, err, "the MultiLock again in the new epoch")
	require.NoError(t, ml.Release(ctx))
	rec.expect(t, 4, metrics.LockHold, "", "", "holds of the second grant")
}

// TestReleaseAfterOwnSessionWriteLeavesNothing: the contract of package
// lock: "nothing of ours is left behind"; Release "deletes the node",
// leader's Resign "our node is deleted", Semaphore.ReturnLease returns the
// lease. For every recipe, a grant's node is written by its own session
// through another lease's GuardedWrite (which refuses only its own grant's
// node), then the grant is released: the node must be gone, and another
// session must get the lock.
func TestReleaseAfterOwnSessionWriteLeavesNothing(t *testing.T) {
	recipes := []string{"mutex", "mutex-handoff", "mutex-revocable", "semaphoremutex", "semaphore-2", "rwlock-write", "rwlock-read", "leader"}
	newFixture(t).Each(t, recipes, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 30*time.Second)
		s := f.Session()
		path := f.Path("relown-" + recipe)
		lk := newLocker(t, recipe, s, path, 0)
		l, err := lk.Acquire(ctx)
		require.NoError(t, err)
		m, _ := mutex.New(s, f.Path("relown-other-"+recipe))
		ml, err := m.Acquire(ctx)
		require.NoError(t, err)
		_, err = ml.GuardedWrite(ctx, &zk.SetDataRequest{Path: l.Path(), Data: []byte("written"), Version: -1})
		t.Logf("GuardedWrite into %s: %v", l.Path(), err)
		relErr := lk.Release(ctx)
		t.Logf("Release: %v", relErr)
		if exists(f.Raw(), l.Path()) {
			t.Errorf("the node %s is left after the release (Release: %v)", l.Path(), relErr)
		}
		other := newLocker(t, recipe, f.Session(), path, 1)
		if recipe == "semaphore-2" {
			other = newLocker(t, "semaphore-1", f.Session(), path, 1) // one free lease is enough only if ours was returned
		}
		if _, err := timed(ctx, 3*time.Second, acquireErr(other)); err != nil {
			t.Errorf("another session cannot take the lock after the release: %v (nodes %v)", err, nodes{f.Raw(), path})
		}
		require.NoError(t, m.Release(ctx))
	})
}

// TestGuardedWriteIntoOwnWaitingNodeRefused: safety.md: "a holder (or a
// waiter) that wrote into its own lock node through its session would let
// the next waiter in while it still holds", hence Session.Set refuses
// contender nodes and GuardedWrite the grant's own node. Here the holder
// is another session (H); session S waits (W1) and holds a lease of
// another lock, through whose GuardedWrite it writes into W1's waiting
// node; a third session waits behind W1 (W2). W2 must not be granted while
// H holds (H is not even in S's hands): the write is refused
// (conn.ErrInvalidArgument), for mutex and rwlock's write side.
func TestGuardedWriteIntoOwnWaitingNodeRefused(t *testing.T) {
	newFixture(t).Each(t, []string{"mutex", "rwlock-write"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 30*time.Second)
		path := f.Path("ownwait-" + recipe)
		hlk := newLocker(t, recipe, f.Session(), path, 0)
		hl, err := hlk.Acquire(ctx)
		require.NoError(t, err)
		s := f.Session()
		w1 := hold(ctx, newLocker(t, recipe, s, path, 1))
		waitFor(t, 10*time.Second, "W1 queued", func() bool { return len(children(f.Raw(), path)) == 2 })
		q := sortedBySeq(f.Raw(), path)
		w1Node := path + "/" + q[1]
		w2 := hold(ctx, newLocker(t, recipe, f.Session(), path, 2))
		waitFor(t, 10*time.Second, "W2 watches W1's node", func() bool { return watched(f, 0, w1Node) })
		m, _ := mutex.New(s, f.Path("ownwait-other-"+recipe))
		ml, err := m.Acquire(ctx)
		require.NoError(t, err)
		_, gwErr := ml.GuardedWrite(ctx, &zk.SetDataRequest{Path: w1Node, Data: []byte("x"), Version: -1})
		t.Logf("GuardedWrite into the waiting node %s: %v", w1Node, gwErr)
		require.ErrorIs(t, gwErr, conn.ErrInvalidArgument, "a guarded write may not set a lock node")
		if l, ok := w2.granted(t, 2*time.Second, "W2"); ok {
			_, hErr := hl.GuardedWrite(ctx)
			t.Errorf("W2 (%s) was granted while H (another session) holds %s (H's GuardedWrite: %v)", l.Path(), hl.Path(), hErr)
		}
		require.NoError(t, hlk.Release(ctx))
		require.NoError(t, m.Release(ctx))
		_ = w1
	})
}

// TestLeaderFollowerDeletedByItsOwnSessionNeverLeads: leader: "A node
// deleted by someone else while its participant waits is never led from";
// "At most one leader among the participants ... whose sessions live".
// Session S has a follower queued behind another session's leader; S
// deletes the follower's own node (Session.Delete: its own session, not a
// bystander). The leader resigns. The follower must not lead from the
// deleted node: if its Campaign returns a lease, the lease's node must
// exist and be the first, and Leader must name it.
func TestLeaderFollowerDeletedByItsOwnSessionNeverLeads(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	path := f.Path("folown/l")
	ld := electionOf(t, f.Session(), path, "leader")
	_, err := ld.Campaign(ctx)
	require.NoError(t, err)
	s := f.Session()
	fe := electionOf(t, s, path, "follower")
	got := make(chan *conn.Lease, 1)
	failed := make(chan error, 1)
	go func() {
		l, err := fe.Campaign(ctx)
		if err != nil {
			failed <- err
			return
		}
		got <- l
	}()
	waitFor(t, 10*time.Second, "the follower queued", func() bool { return len(children(f.Raw(), path)) == 2 })
	q := sortedBySeq(f.Raw(), path)
	fNode := path + "/" + q[1]
	require.NoError(t, s.Delete(ctx, fNode, -1))
	require.NoError(t, ld.Resign(ctx))
	select {
	case l := <-got:
		lead, lerr := fe.Leader(ctx)
		if l.Path() == fNode || !exists(f.Raw(), l.Path()) || lead.Node != l.Path() {
			t.Errorf("the follower leads from %s (its deleted node %s; exists %v; Leader %v, %v; lease Err %v)",
				l.Path(), fNode, exists(f.Raw(), l.Path()), lead.Node, lerr, l.Err())
		}
		require.NoError(t, fe.Resign(ctx))
	case err := <-failed:
		t.Logf("the follower's Campaign failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Errorf("the follower's Campaign neither led nor failed 10 s after the leader resigned (nodes %v)", nodes{f.Raw(), path})
	}
}

// TestWatchesGaugeAfterCloseWithEverythingWatching: metrics.Hooks.Watches:
// "a watch ... counted until it fires, its last caller stops waiting, or
// its epoch ends". One session with a held lease whose Lost and Revoked are
// armed, a waiter of every queue recipe behind another session's holders,
// a local-handoff waiter, and an Observe; Close ends the epoch: the gauge
// must come back to 0.
func TestWatchesGaugeAfterCloseWithEverythingWatching(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	rec := &metricsRec{}
	s := f.Session(conn.WithMetrics(rec.Hooks()))
	other := f.Session()
	root := f.Path("gclose")
	hm, _ := mutex.New(s, root+"/held", lock.WithLocalHandoff(2, 0), lock.WithRevocable())
	l, err := hm.Acquire(ctx)
	require.NoError(t, err)
	_, _ = l.Lost(), l.Revoked()
	go func() { _, _ = hm.Acquire(ctx) }() // a local waiter
	for _, recipe := range []string{"mutex", "rwlock-write", "semaphoremutex", "semaphore-1", "exclusive", "leader"} {
		p := root + "/" + recipe
		_, err := newLocker(t, recipe, other, p, 0).Acquire(ctx)
		require.NoError(t, err)
		lk := newLocker(t, recipe, s, p, 1)
		go func() { _, _ = lk.Acquire(ctx) }()
	}
	obs := electionOf(t, s, root+"/leader", "observer").Observe(ctx)
	waitFor(t, 10*time.Second, "every waiter watching", func() bool { return rec.watches.Load() >= 7 })
	t.Logf("gauge before Close: %d", rec.watches.Load())
	require.NoError(t, s.Close())
	closesWithin(obs, 2*time.Second)
	rec.gaugeDrains(t, 3*time.Second)
}

// TestSuspendedAsLostLeaseStaysLostAfterReconnect: conn's
// WithSuspendedAsLost: "a lock holder is told its lock is lost as soon as
// the connection is Suspended"; Lease.Err "says why once Lost is closed";
// GuardedWrite "A lost lease fails with ErrLeaseLost"; Fence "ErrLeaseLost
// once the lease ended"; lock.WithLocalHandoff: a node is not handed on
// after a loss. A local-handoff mutex holder with a local waiter is
// suspended (lost), then the connection comes back on the same session, so
// its node still exists: GuardedWrite and a first Fence must still fail
// with ErrLeaseLost, and after the holder's Release (nil) the local waiter
// must not be granted on the lost grant's node.
func TestSuspendedAsLostLeaseStaysLostAfterReconnect(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	px, s := f.ProxiedSession(conn.WithSuspendedAsLost(), conn.WithSessionTimeout(6*time.Second))
	path := f.Path("susprec/m")
	m, _ := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	l1, err := m.Acquire(ctx)
	require.NoError(t, err)
	local := hold(ctx, m)
	time.Sleep(100 * time.Millisecond) // the local waiter queues in the process
	suspend(t, px, s)
	recv(t, l1.Lost(), 3*time.Second, "Lost did not close on Suspended")
	sid := l1.Epoch().SessionID()
	px.Heal()
	waitFor(t, 10*time.Second, "reconnected", func() bool { return s.State() == conn.Reconnected })
	require.Equal(t, sid, epochOf(t, s).SessionID(), "same session")
	require.True(t, exists(f.Raw(), l1.Path()), "the lost grant's node survives with the session")
	_, err = l1.GuardedWrite(ctx)
	if !errors.Is(err, conn.ErrLeaseLost) {
		t.Errorf("GuardedWrite of the lost lease after the reconnect: %v, want ErrLeaseLost", err)
	}
	if fe, err := l1.Fence(ctx); !errors.Is(err, conn.ErrLeaseLost) {
		t.Errorf("Fence of the lost lease after the reconnect: %v, %v, want ErrLeaseLost", fe, err)
	}
	require.NoError(t, m.Release(ctx), "release after loss")
	if l2, ok := local.granted(t, 3*time.Second, "local waiter"); ok {
		if l2.Path() == l1.Path() {
			t.Errorf("the local waiter was handed the lost grant's node %s", l1.Path())
		}
		require.NoError(t, local.release())
	}
	waitFor(t, 5*time.Second, "the lost grant's node gone", func() bool { return !exists(f.Raw(), l1.Path()) })
}

// TestRevokeSemaphoreLeaseMetrics: lock.Revoke asks "the holder of node (a
// Participant.Node or Lease.Path of a mutex, semaphoremutex or rwlock)";
// a revocable holder "sees Lease.Revoked close ... keeps the lock until it
// releases"; metrics.LockRevokeRequest when "its Lease.Revoked channel was
// closed". A revocable Semaphore with two leases, both held by one session:
// one is revoked through another session; only its Revoked closes, the
// other's stays open, a third contender waits until the revoked lease is
// returned, and one revoke request is reported, as recipe "semaphore".
func TestRevokeSemaphoreLeaseMetrics(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	rec := &metricsRec{}
	path := f.Path("semrev/s")
	sem, err := semaphoremutex.NewSemaphore(f.Session(conn.WithMetrics(rec.Hooks())), path, 2, lock.WithRevocable())
	require.NoError(t, err)
	l1, err := sem.Acquire(ctx)
	require.NoError(t, err)
	l2, err := sem.Acquire(ctx)
	require.NoError(t, err)
	r1, r2 := l1.Revoked(), l2.Revoked()
	third := hold(ctx, newLocker(t, "semaphore-2", f.Session(), path, 3))
	require.NoError(t, lock.Revoke(ctx, f.Session(), l1.Path()))
	recv(t, r1, 5*time.Second, "the revoked lease's Revoked did not close")
	quiet(t, r2, 500*time.Millisecond, "the other lease's Revoked closed")
	third.notGranted(t, 500*time.Millisecond, "a third contender got a lease while both are held")
	require.NoError(t, sem.ReturnLease(ctx, l1))
	third.wait(t, 10*time.Second, "the third contender after the return")
	require.NoError(t, sem.ReturnLease(ctx, l2))
	rec.expect(t, 1, metrics.LockRevokeRequest, "semaphore", "", "revoke requests")
	rec.expect(t, 2, metrics.LockHold, "semaphore", "", "holds")
	rec.expect(t, 0, metrics.LockLost, "", "", "losses")
}

// TestRevokeAndSetOfKeptWriteNodeAndExclusiveNodeWriteNothing: lock.Revoke:
// "A sealed node (the default) ... fails with ErrNotRevocable from any
// session"; "A path whose name is not a lock contender's fails with
// conn.ErrInvalidArgument"; Session.Set refuses a contender's node. Two
// sealed nodes off the usual path: an rwlock's write node kept after a
// downgrade (marked through its ACL, with a writer queued behind it), and
// an exclusive lock's node (named "lock"). Revoke through the owner's own
// session and through another (and the owner's Session.Set of the kept
// write node) must write nothing into either (data version unchanged), the queued contenders must
// stay out, and the releases must leave no node.
func TestRevokeAndSetOfKeptWriteNodeAndExclusiveNodeWriteNothing(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	s, other := f.Session(), f.Session()
	path := f.Path("rvodd/rw")
	rw := newRW(t, s, path)
	wl, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	q := hold(ctx, newRW(t, f.Session(), path).WriteLock())
	waitFor(t, 10*time.Second, "writer queued", func() bool { return watched(f, 0, wl.Path()) })
	_, err = rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, rw.WriteLock().Release(ctx))
	xpath := f.Path("rvodd/x")
	x := newLocker(t, "exclusive", s, xpath, 0)
	xl, err := x.Acquire(ctx)
	require.NoError(t, err)
	xw := hold(ctx, newLocker(t, "exclusive", f.Session(), xpath, 1))
	waitFor(t, 10*time.Second, "exclusive waiter watching", func() bool { return watched(f, 0, xl.Path()) })
	for _, node := range []string{wl.Path(), xl.Path()} {
		for name, sess := range map[string]*conn.Session{"own": s, "other": other} {
			err := lock.Revoke(ctx, sess, node)
			t.Logf("Revoke %s through the %s session: %v", node, name, err)
			if err == nil {
				t.Errorf("Revoke of the sealed %s through the %s session: nil, want ErrNotRevocable or ErrInvalidArgument", node, name)
			}
		}
	}
	// (Session.Set on the exclusive node: TestExclusiveNodeWrittenByItsOwnSessionIsReleased.)
	if _, err := s.Set(ctx, wl.Path(), []byte("mine"), -1); !errors.Is(err, conn.ErrInvalidArgument) {
		t.Errorf("Session.Set on the kept write node: %v, want ErrInvalidArgument", err)
	}
	for _, node := range []string{wl.Path(), xl.Path()} {
		if _, st, err := f.Raw().Get(node); err != nil || st.Version != 0 {
			t.Errorf("%s was written: %v, %+v", node, err, st)
		}
	}
	q.notGranted(t, time.Second, "the queued writer got in while our read lock holds")
	require.NoError(t, rw.ReadLock().Release(ctx))
	q.wait(t, 10*time.Second, "writer after the read release")
	require.NoError(t, q.release())
	require.NoError(t, x.Release(ctx))
	xw.wait(t, 10*time.Second, "exclusive waiter after the release")
}
