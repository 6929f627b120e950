package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// writeRefused has l's GuardedWrite set node's data: it must be refused
// (conn.ErrInvalidArgument), and waiter w must not be granted within 2 s
// while held, the lease w waits behind, stands.
func writeRefused(t *testing.T, ctx context.Context, l *conn.Lease, node string, w *holder, held *conn.Lease) {
	t.Helper()
	err := guardedSet(ctx, l, node, []byte("x"), -1)
	t.Logf("GuardedWrite of the lease on %s into %s: %v", l.Path(), node, err)
	require.ErrorIs(t, err, conn.ErrInvalidArgument, "a guarded write may not set a lock node")
	if wl, ok := w.granted(t, 2*time.Second, "waiter"); ok {
		_, gwErr := held.GuardedWrite(ctx)
		t.Errorf("the waiter was granted %s while %s holds (its Err %v, its GuardedWrite %v)", wl.Path(), held.Path(), held.Err(), gwErr)
	}
}

// TestGuardedWriteIntoSiblingLockNodeRefused: docs/safety.md, guarantee 1
// (no write into a holder's node but its own release admits a waiter), and
// "GuardedWrite refuses a write into the grant's own node". One session
// holds mutexes /a and /b, another waits behind /b: /a's GuardedWrite into
// /b's node (the server would let it) is refused and the waiter stays out.
func TestGuardedWriteIntoSiblingLockNodeRefused(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	s := f.Session()
	ma := newLocker(t, "mutex", s, f.Path("sib/a"), 0)
	mb := newLocker(t, "mutex", s, f.Path("sib/b"), 0)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	w := hold(ctx, newLocker(t, "mutex", f.Session(), f.Path("sib/b"), 0))
	waitFor(t, 10*time.Second, "the waiter watches /b's holder", func() bool { return watched(f, 0, lb.Path()) })
	writeRefused(t, ctx, la, lb.Path(), w, lb)
	require.NoError(t, mb.Release(ctx))
	require.NoError(t, ma.Release(ctx))
}

// TestMultiLockLeaseWriteIntoItsOtherLeaseRefused: the same through a
// MultiLock over a mutex and a semaphore mutex on one session: the first
// lease's GuardedWrite into the second lease's node, with another session
// waiting on the semaphore mutex, is refused and the waiter stays out.
func TestMultiLockLeaseWriteIntoItsOtherLeaseRefused(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	r := oneOfEach(f.Session(), f.Path("ml"))
	ls, err := r.ml.Acquire(ctx)
	require.NoError(t, err)
	require.Len(t, ls, 2)
	la, lb := ls[0], ls[1] // path order: /ml/ma (mutex), then /ml/sm (semaphore mutex)
	w := hold(ctx, newLocker(t, "semaphoremutex", f.Session(), f.Path("ml/sm"), 0))
	waitFor(t, 10*time.Second, "the waiter watches the semaphore mutex's holder", func() bool {
		return len(watchesUnder(f, 0, f.Path("ml/sm"))) > 0
	})
	writeRefused(t, ctx, la, lb.Path(), w, lb)
	require.NoError(t, r.ml.Release(ctx))
}

// TestDowngradedReaderWritesIntoKeptWriteNode: rwlock's doc: "If a writer
// is queued between our two nodes, the write node is kept until the read
// lock is released", and it keeps the writer out. The downgraded reader's
// GuardedWrite sets the kept write node's data (before and after the write
// release): the queued writer must not get in while the reader holds.
func TestDowngradedReaderWritesIntoKeptWriteNode(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	sc := newWriterBehind(t, f, ctx, f.Path("dgw/rw"))
	waitFor(t, 10*time.Second, "the writer waits on our write node", func() bool { return watched(f, 0, sc.wA.Path()) })
	rl, err := sc.rwA.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	for _, stage := range []string{"holding both", "write released, node kept"} {
		if stage != "holding both" {
			require.NoError(t, sc.rwA.WriteLock().Release(ctx))
		}
		gwErr := guardedSet(ctx, rl, sc.wA.Path(), []byte(stage), -1)
		t.Logf("%s: the read lease's GuardedWrite into the write node: %v", stage, gwErr)
		if _, ok := sc.q.granted(t, 2*time.Second, "writer"); ok {
			t.Fatalf("%s: the queued writer was granted while our read lock holds (read Err %v)", stage, rl.Err())
		}
	}
	require.NoError(t, sc.rwA.ReadLock().Release(ctx))
	sc.q.wait(t, 10*time.Second, "writer after the read release")
}

// TestGuardedWriteAfterEveryKindOfEndSaysLost: GuardedWrite: "A lost
// lease fails with ErrLeaseLost" (epoch ended, node deleted, or released).
// Every way a lease ends, across recipes (a kept write node after a
// downgrade, a returned semaphore lease, a released MultiLock, a resign,
// Close, expiry, WithSuspendedAsLost while blackholed): the GuardedWrite
// fails with ErrLeaseLost within 2 s and writes nothing.
func TestGuardedWriteAfterEveryKindOfEndSaysLost(t *testing.T) {
	f, ctx := setUp(t, 90*time.Second)
	res := f.Path("gwlost-res")
	f.Register(res, nil)
	check := func(t *testing.T, what string, l *conn.Lease) {
		t.Helper()
		d, err := timed(ctx, 2*time.Second, func(ctx context.Context) error { return guardedSet(ctx, l, res, []byte("stale"), -1) })
		if !errors.Is(err, conn.ErrLeaseLost) {
			t.Errorf("%s: GuardedWrite after %v: %v, want an error matching conn.ErrLeaseLost", what, d, err)
		}
		if string(f.Data(res)) == "stale" {
			t.Errorf("%s: the stale write was applied", what)
		}
	}
	t.Run("downgrade-kept-write-node", func(t *testing.T) {
		f := f.In(t)
		sc := newWriterBehind(t, f, ctx, f.Path("gwlost/rw"))
		sc.downgradeKeepingW(t, ctx)
		check(t, "write lease released, node kept", sc.wA)
		require.NoError(t, sc.rwA.ReadLock().Release(ctx))
		sc.q.wait(t, 10*time.Second, "writer")
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
	for _, end := range []string{"session-closed", "epoch-expired"} {
		t.Run(end, func(t *testing.T) {
			f := f.In(t)
			s := f.Session()
			l, err := newLocker(t, "mutex", s, f.Path("gwlost/"+end), 0).Acquire(ctx)
			require.NoError(t, err)
			if end == "session-closed" {
				require.NoError(t, s.Close())
			} else {
				// The client learns of the expiry when it reconnects; until
				// then a write's fate is unknown (ErrConnectionLoss).
				f.Expire(ctx, l.Epoch())
				select {
				case <-l.Lost():
				case <-ctx.Done():
					t.Fatal("Lost not closed after the expiry")
				}
			}
			check(t, end, l)
		})
	}
	t.Run("suspended-as-lost-blackholed", func(t *testing.T) {
		f := f.In(t)
		px, s := f.ProxiedSession(conn.WithSuspendedAsLost())
		l, err := newLocker(t, "mutex", s, f.Path("gwlost/susp"), 0).Acquire(ctx)
		require.NoError(t, err)
		suspend(t, px, s)
		check(t, "suspended as lost, blackholed", l)
		px.Heal()
	})
}

// TestWriteLeaseWriteIntoItsDowngradeReadNodeRefused: while a writer holds
// the rwlock "no other contender of any process on the path does". The
// downgrader's write lease writes, through GuardedWrite, into its own read
// node while a writer of another session waits behind that node: the
// write is refused and the writer stays out.
func TestWriteLeaseWriteIntoItsDowngradeReadNodeRefused(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	path := f.Path("wdr/rw")
	rw := newRW(t, f.Session(), path)
	wl, _ := downgrade(t, ctx, rw) // the read lock is granted at once
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
	writeRefused(t, ctx, wl, readNode, w2, wl)
	require.NoError(t, rw.ReadLock().Release(ctx))
	require.NoError(t, rw.WriteLock().Release(ctx))
}

// TestReleaseAfterOwnSessionWriteLeavesNothing: lock's contract, "nothing
// of ours is left behind". For every recipe, a grant's node is written by
// its own session through another lease's GuardedWrite, then the grant is
// released: the node must be gone, and another session must get the lock.
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
		t.Logf("GuardedWrite into %s: %v", l.Path(), guardedSet(ctx, ml, l.Path(), []byte("written"), -1))
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

// TestGuardedWriteIntoOwnWaitingNodeRefused: safety.md: a waiter that wrote
// into its own lock node would let the next waiter in. H (another session)
// holds; session S waits (W1) and, through a lease of another lock, writes
// into W1's node; W2 waits behind W1. The write is refused and W2 stays out
// while H holds, for mutex and rwlock's write side.
func TestGuardedWriteIntoOwnWaitingNodeRefused(t *testing.T) {
	newFixture(t).Each(t, []string{"mutex", "rwlock-write"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 30*time.Second)
		path := f.Path("ownwait-" + recipe)
		hlk := newLocker(t, recipe, f.Session(), path, 0)
		hl, err := hlk.Acquire(ctx)
		require.NoError(t, err)
		s := f.Session()
		hold(ctx, newLocker(t, recipe, s, path, 1)) // W1
		waitFor(t, 10*time.Second, "W1 queued", func() bool { return len(children(f.Raw(), path)) == 2 })
		w1Node := path + "/" + sortedBySeq(f.Raw(), path)[1]
		w2 := hold(ctx, newLocker(t, recipe, f.Session(), path, 2))
		waitFor(t, 10*time.Second, "W2 watches W1's node", func() bool { return watched(f, 0, w1Node) })
		m, _ := mutex.New(s, f.Path("ownwait-other-"+recipe))
		ml, err := m.Acquire(ctx)
		require.NoError(t, err)
		writeRefused(t, ctx, ml, w1Node, w2, hl)
		require.NoError(t, hlk.Release(ctx))
		require.NoError(t, m.Release(ctx))
	})
}

// TestRevokeAndSetOfKeptWriteNodeAndExclusiveNodeWriteNothing: lock.Revoke
// of a sealed node fails (ErrNotRevocable, or ErrInvalidArgument for a
// name not a contender's); Session.Set refuses a contender's node. On an
// rwlock's write node kept after a downgrade and an exclusive lock's node
// ("lock"), each with a waiter, Revoke through the owner's session and
// another, and the owner's Set of the kept node, write nothing (data
// version 0), the waiters stay out, and the releases leave no node.
func TestRevokeAndSetOfKeptWriteNodeAndExclusiveNodeWriteNothing(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	sc := newWriterBehind(t, f, ctx, f.Path("rvodd/rw"))
	s, other := sc.sA, f.Session()
	wl := sc.wA
	waitFor(t, 10*time.Second, "writer queued", func() bool { return watched(f, 0, wl.Path()) })
	sc.downgradeKeepingW(t, ctx)
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
	sc.q.notGranted(t, time.Second, "the queued writer got in while our read lock holds")
	require.NoError(t, sc.rwA.ReadLock().Release(ctx))
	sc.q.wait(t, 10*time.Second, "writer after the read release")
	require.NoError(t, sc.q.release())
	require.NoError(t, x.Release(ctx))
	xw.wait(t, 10*time.Second, "exclusive waiter after the release")
}

// TestGuardedWriteDeletingItsOwnNodeUnderLocalHandoff: under
// WithLocalHandoff "the node is not handed on once its deletion is seen",
// and never two holders. G1 holds through a handoff handle (nobody called
// its Lost), B (another session) queues behind, G2 waits in the process.
// A GuardedWrite of the same session deletes G1's node (GuardedWrite
// refuses sets of lock nodes, not deletes): G1's own ("own"), or that of a
// lease on another mutex ("sibling"). B enters; G1's Lost must close, and
// G1's release must not hand the deleted node to G2 while B holds.
func TestGuardedWriteDeletingItsOwnNodeUnderLocalHandoff(t *testing.T) {
	newFixture(t).Each(t, []string{"own", "sibling"}, func(t *testing.T, f *fixture, name string) {
		ctx := ctxT(t, 30*time.Second)
		path := f.Path("gwdel-" + name)
		s := f.Session()
		mA, _ := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
		mB, _ := mutex.New(f.Session(), path)
		g1, l1, b, g2 := handoffBehind(t, f, ctx, mA, mB, path)
		writer := l1
		if name == "sibling" {
			var err error
			writer, err = newLocker(t, "mutex", s, path+"-other", 0).Acquire(ctx)
			require.NoError(t, err)
		}
		err := guardedDelete(ctx, writer, l1.Path())
		t.Logf("GuardedWrite of %s deleting G1's node: %v", writer.Path(), err)
		if err != nil {
			require.ErrorIs(t, err, conn.ErrInvalidArgument, "a refused delete must be refused as bad input")
			require.NoError(t, g1.release())
			return
		}
		lb := b.wait(t, 10*time.Second, "B, next in the queue once G1's node is gone")
		if !closesWithin(l1.Lost(), 5*time.Second) {
			t.Errorf("G1 was not told: Lost still open 5 s after a guarded write of its session deleted its node (Err %v)", l1.Err())
		}
		require.NoError(t, g1.release(), "release after the loss is nil")
		if l2, ok := g2.granted(t, 2*time.Second, "G2"); ok {
			_, gwErr := l2.GuardedWrite(ctx)
			t.Errorf("G2 was granted %s (its GuardedWrite: %v) while B holds %s (Err %v): two holders", l2.Path(), gwErr, lb.Path(), lb.Err())
		}
		require.NoError(t, b.release())
		g2.wait(t, 10*time.Second, "G2 after B")
		require.NoError(t, g2.release())
	})
}

// TestFenceSeesDelete: conn.Lease.Lost: "Before Lost or Revoked,
// only Fence and GuardedWrite see a delete"; Fence "returns the grant's
// fencing token, or ErrLeaseLost"; safety.md's fault table, "lock node
// deleted by an operator": "Fence and GuardedWrite fail with
// ErrLeaseLost"; operations.md counts the loss when "Fence or GuardedWrite
// looks at it". A holder whose node a bystander deleted (and, for
// exclusive-replaced, another session re-created), which never called
// Lost: Fence must fail with ErrLeaseLost, whether it is the first Fence
// of the grant or a Fence called before the delete too.
func TestFenceSeesDelete(t *testing.T) {
	f := newFixture(t)
	names := append(append([]string{}, probe2Recipes...), "exclusive-replaced")
	for _, fenceFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "first-fence-after-delete", true: "fence-before-and-after"}[fenceFirst], func(t *testing.T) {
			f.Each(t, names, func(t *testing.T, f *fixture, name string) {
				ctx := ctxT(t, 20*time.Second)
				recipe := name
				if name == "exclusive-replaced" {
					recipe = "exclusive"
				}
				path := f.Path("fd-" + name)
				lk := newLocker(t, recipe, f.Session(), path, 0)
				l, err := lk.Acquire(ctx)
				require.NoError(t, err)
				var fe0 conn.Fence
				if fenceFirst {
					fe0, err = l.Fence(ctx)
					require.NoError(t, err)
				}
				require.NoError(t, f.Raw().Delete(l.Path(), -1))
				if name == "exclusive-replaced" {
					_, err := newLocker(t, "exclusive", f.Session(), path, 1).Acquire(ctx)
					require.NoError(t, err)
				}
				if fenceFirst {
					time.Sleep(500 * time.Millisecond) // shapes: past any watch event of the delete
				}
				fe, err := l.Fence(ctx)
				t.Logf("fence before %v, after the delete: %v %v; lease err %v", fe0, fe, err, l.Err())
				if !errors.Is(err, conn.ErrLeaseLost) {
					t.Errorf("Fence after its node was deleted: %v, %v; want ErrLeaseLost", fe, err)
					// GuardedWrite, by contrast, sees it
					t.Logf("GuardedWrite meanwhile: %v", guardedCreate(ctx, l, path+"-res"))
				}
			})
		})
	}
}
