package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// TestSharedListingsMixedHandoffCancelStress checks
// CHANGELOG's "one session's waiters share their listings" against mutex's
// "Mutual exclusion among all processes using the lock path", conn.Fence's
// "it grows strictly with every grant of a lock, in every configuration" and
// "Nothing is left behind: a failed, timed-out or cancelled acquire deletes
// its node". One session queues many goroutines at once on one path through
// a plain handle and two WithLocalHandoff handles (same bound), next to a
// second session (handoff) and a third (plain); a third of the acquires have
// a deadline of 5–60 ms, so waiters leave the shared listing while others
// join. Every holder checks an in-process occupancy counter, writes a
// register through GuardedWrite with the version it read (a concurrent
// holder's write makes it fail), and compares its Fence with the last one.
// At the end no node and no watch on the lock path may remain.
func TestSharedListingsMixedHandoffCancelStress(t *testing.T) {
	f := newFixture(t)
	path := f.Path("r2-shared/lock")
	reg := f.Path("r2-shared-reg")
	ctx := ctxT(t, 28*time.Second)
	f.Register(reg, []byte("0"))
	bys := f.Raw()
	sA := f.Session()
	mk := func(s *conn.Session, opts ...lock.Option) *mutex.InterProcessMutex {
		m, err := mutex.New(s, path, opts...)
		require.NoError(t, err)
		return m
	}
	handles := []*mutex.InterProcessMutex{
		mk(sA), mk(sA), mk(sA, lock.WithLocalHandoff(3, 0)), mk(sA, lock.WithLocalHandoff(3, 0)),
		mk(f.Session(), lock.WithLocalHandoff(2, 0)), mk(f.Session()),
	}
	var (
		occ    occupancy
		fences fenceStore
		mu     sync.Mutex
		short  int
	)
	stop := time.Now().Add(8 * time.Second)
	spawn(14, func(g int) {
		r := rand.New(rand.NewSource(int64(g)))
		m := handles[g%len(handles)]
		n, err := stressRounds(ctx, r, stop, 6*time.Second, m.Acquire, func(lease *conn.Lease) {
			if n := occ.enter(); n != 1 {
				t.Errorf("g%d: %d holders at once", g, n)
			}
			fe, err := lease.Fence(ctx)
			if err != nil {
				t.Errorf("g%d: fence: %v", g, err)
			}
			if prev, ok := fences.write(fmt.Sprint("g", g), fe); !ok {
				t.Errorf("g%d: fence %v not above previous %v", g, fe, prev)
			}
			data, st, err := bys.Get(reg)
			if err != nil {
				t.Errorf("read register: %v", err)
			} else {
				n, _ := strconv.Atoi(string(data))
				if err := guardedSet(ctx, lease, reg, []byte(strconv.Itoa(n+1)), st.Version); err != nil {
					t.Errorf("g%d: guarded write: %v", g, err)
				}
			}
			occ.leave()
			if err := m.Release(context.WithoutCancel(ctx)); err != nil {
				t.Errorf("g%d: release: %v", g, err)
			}
		})
		if err != nil {
			t.Errorf("g%d: acquire: %v", g, err)
		}
		mu.Lock()
		short += n
		mu.Unlock()
	}).Wait()
	grants := fences.n + len(fences.refused)
	t.Logf("%d grants, %d acquires timed out while queued", grants, short)
	if grants < 20 {
		t.Errorf("only %d grants", grants)
	}
	waitFor(t, 10*time.Second, "no lock node left", func() bool { return len(children(f.Raw(), path)) == 0 })
	waitFor(t, 10*time.Second, "no watch left on the lock path", func() bool {
		return len(watchesUnder(f, 0, path)) == 0
	})
}

// TestSharedListingWaitersStartOverAfterExpiry checks package lock's
// "A session lost while waiting is not an error: Acquire starts over in the
// next one" for waiters of one session sharing their listing (a plain
// handle and a WithLocalHandoff handle, 10 goroutines) queued behind B:
// A's epoch is expired by the server. Every waiter must queue again in
// the next epoch and, once B releases, be granted one at a time, with no
// error, and nothing left at the end.
func TestSharedListingWaitersStartOverAfterExpiry(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	path := f.Path("r2-expwait/lock")
	bys := f.Raw()
	sA := f.Session()
	b, m1, m2 := f.heldAgainst(ctx, sA, path) // B, another session, holds
	var occ occupancy
	var granted atomic.Int32
	const n = 10
	wg := spawn(n, func(i int) {
		m := [2]*mutex.InterProcessMutex{m1, m2}[i%2]
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := m.Acquire(actx); err != nil {
			t.Errorf("w%d: %v", i, err)
			return
		}
		if k := occ.enter(); k != 1 {
			t.Errorf("w%d: %d holders", i, k)
		}
		granted.Add(1)
		time.Sleep(5 * time.Millisecond)
		occ.leave()
		if err := m.Release(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("w%d: release: %v", i, err)
		}
	})
	waitFor(t, 10*time.Second, "A's waiters queued", func() bool { return len(children(bys, path)) == 1+n/2+1 })
	ep, err := connlink.Of(sA).Epoch(ctx)
	require.NoError(t, err)
	f.Expire(ctx, ep)
	waitFor(t, 10*time.Second, "A's waiters queued again in the next epoch", func() bool {
		return len(children(bys, path)) == 1+n/2+1 && ep.Err() != nil
	})
	require.NoError(t, b.release())
	wg.Wait()
	if granted.Load() != n {
		t.Fatalf("%d of %d waiters granted", granted.Load(), n)
	}
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(bys, path)) == 0 })
}

// TestTryAcquireBesideLocalHandoffDoesNotWait checks package lock's
// "TryAcquire never waits for another holder: it returns (nil, false, nil)
// when the lock is taken" for a WithLocalHandoff handle whose node another
// goroutine of the process holds (and a third waits on in the process): it
// must return false within a short time, and leave the local queue as it
// was (the waiter is granted next, the TryAcquire caller never).
func TestTryAcquireBesideLocalHandoffDoesNotWait(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	path := f.Path("r2-try/lock")
	m, _ := mutex.New(f.Session(), path, lock.WithLocalHandoff(3, 0))
	g1 := hold(ctx, m)
	l1 := g1.wait(t, 10*time.Second, "G1")
	g3 := hold(ctx, m)
	waitFor(t, 10*time.Second, "G3 waiting in the process", func() bool { return watched(f, 0, l1.Path()) })
	type res struct {
		ok  bool
		err error
	}
	ch := make(chan res, 1)
	t0 := time.Now()
	go func() {
		_, ok, err := m.TryAcquire(ctx)
		if ok {
			_ = m.Release(ctx)
		}
		ch <- res{ok, err}
	}()
	r := recv(t, ch, 3*time.Second, "TryAcquire waits for the local holder")
	if r.ok || r.err != nil {
		t.Fatalf("TryAcquire beside a local holder: ok %v, err %v", r.ok, r.err)
	}
	t.Logf("TryAcquire returned false after %v", time.Since(t0))
	require.NoError(t, g1.release())
	g3.wait(t, 10*time.Second, "G3")
	require.NoError(t, g3.release())
}

// TestSharedListingWaiterWhoseNodeWasDeleted checks mutex's "A lock
// node deleted by a third party while its owner is queued is noticed only
// once granted, through the lease" and conn.Lease's "Fence ... fails with
// ErrLeaseLost ... when the read finds the node gone", with waiters of one
// session that share their listing: W1 holds, W2 and W3 (same session) queue
// behind, a bystander deletes W2's node (W3 now follows W1). On W1's release
// both may be granted; W2's lease must then refuse guarded writes and its
// Fence, and its Lost must close, while W3's guarded write commits.
func TestSharedListingWaiterWhoseNodeWasDeleted(t *testing.T) {
	f, ctx := setUp(t, 25*time.Second)
	path := f.Path("r2-qdel/lock")
	reg := f.Path("r2-qdel-reg")
	bys := f.Raw()
	f.Register(reg, nil)
	m, _ := mutex.New(f.Session(), path)
	w1 := hold(ctx, m)
	w1.wait(t, 10*time.Second, "W1")
	w2 := hold(ctx, m)
	waitFor(t, 10*time.Second, "W2 queued", func() bool { return len(children(bys, path)) == 2 })
	n2 := children(bys, path)
	w3 := hold(ctx, m)
	waitFor(t, 10*time.Second, "W3 queued", func() bool { return len(children(bys, path)) == 3 })
	// W2's node is the one of the two first that is not W1's: the newer.
	var w2node string
	_, st0, _ := bys.Get(path + "/" + n2[0])
	_, st1, _ := bys.Get(path + "/" + n2[1])
	if st0.Czxid > st1.Czxid {
		w2node = n2[0]
	} else {
		w2node = n2[1]
	}
	require.NoError(t, bys.Delete(path+"/"+w2node, -1))
	require.NoError(t, w1.release())
	l3 := w3.wait(t, 10*time.Second, "W3")
	err := guardedSet(ctx, l3, reg, []byte("w3"), -1)
	require.NoError(t, err, "W3's guarded write")
	select {
	case l2 := <-w2.got:
		t.Logf("W2 granted on its deleted node %s", l2.Path())
		if err := guardedSet(ctx, l2, reg, []byte("w2"), -1); !errors.Is(err, conn.ErrLeaseLost) {
			t.Fatalf("W2's guarded write beside W3: %v (want conn.ErrLeaseLost)", err)
		}
		if f, err := l2.Fence(ctx); !errors.Is(err, conn.ErrLeaseLost) {
			t.Fatalf("W2's fence: %v, %v (want conn.ErrLeaseLost)", f, err)
		}
		recv(t, l2.Lost(), 5*time.Second, "W2's Lost open on a deleted node")
	case err := <-w2.failed:
		t.Logf("W2's acquire failed: %v", err)
	case <-time.After(2 * time.Second):
		t.Logf("W2 still waiting")
	}
	require.NoError(t, w3.release())
}

// TestSharedListingsWithForeignZkLockContenders checks mutex's
// "Mutual exclusion among all processes using the lock path (Curator's
// InterProcessMutex, and the lock nodes of kazoo and go-zookeeper, count as
// contenders)" with one session's shared listings: 8 goroutines of one
// session (a plain handle and a WithLocalHandoff handle; a third of the
// acquires with a 5–60 ms deadline) and two raw go-zookeeper clients
// looping on zk.Lock on the same path. One ledger for all.
func TestSharedListingsWithForeignZkLockContenders(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	path := f.Path("r2-foreign/lock")
	m1, m2 := mutexPair(f.Session(), path)
	var occ occupancy
	var grants, foreign atomic.Int32
	enter := func(who string) {
		if n := occ.enter(); n != 1 {
			t.Errorf("%s: %d holders at once", who, n)
		}
		grants.Add(1)
		time.Sleep(2 * time.Millisecond)
		occ.leave()
	}
	stop := time.Now().Add(7 * time.Second)
	ours := spawn(8, func(g int) {
		r := rand.New(rand.NewSource(int64(g)))
		m := m1
		if g%2 == 1 {
			m = m2
		}
		_, err := stressRounds(ctx, r, stop, 8*time.Second, m.Acquire, func(*conn.Lease) {
			enter("ours")
			if err := m.Release(context.WithoutCancel(ctx)); err != nil {
				t.Errorf("g%d: release: %v", g, err)
			}
		})
		if err != nil {
			t.Errorf("g%d: %v", g, err)
		}
	})
	zc := f.Raw() // one client, two go-zookeeper locks
	foreignLocks := spawn(2, func(int) {
		l := zk.NewLock(zc, path, zkWorld)
		for time.Now().Before(stop) {
			if err := l.Lock(); err != nil {
				t.Errorf("zk.Lock: %v", err)
				return
			}
			enter("zk.Lock")
			foreign.Add(1)
			if err := l.Unlock(); err != nil {
				t.Errorf("zk.Unlock: %v", err)
				return
			}
		}
	})
	ours.Wait()
	foreignLocks.Wait()
	t.Logf("%d grants, %d of them go-zookeeper's", grants.Load(), foreign.Load())
	if foreign.Load() == 0 {
		t.Error("the foreign contenders never got the lock")
	}
}
