package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
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
	path := f.Path("shared/lock")
	reg := f.Path("shared-reg")
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
		n, err := stressLoop(ctx, r, stop, 6*time.Second, m.Acquire, func(lease *conn.Lease) {
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
	path := f.Path("expwait/lock")
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
	path := f.Path("try/lock")
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
	path := f.Path("qdel/lock")
	reg := f.Path("qdel-reg")
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
	path := f.Path("foreign/lock")
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
		_, err := stressLoop(ctx, r, stop, 8*time.Second, m.Acquire, func(*conn.Lease) {
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

// TestForeignNodeClaimingSealedIsNotTrusted checks
// mutex/doc.go: "No write into the holder's node lets anyone else in. ...
// a waiter trusts a data change as its predecessor's release only on a node
// that was sealed when it read it ... A foreign client's node (Curator,
// kazoo, go-zookeeper) whose data changes is read again, never taken as
// released" (rwlock/doc.go and semaphoremutex/doc.go say the same: "a
// waiter trusts a data change as a writer's release only on a node that
// was sealed when it read it (see package mutex)"), and mutual exclusion
// "among all processes using the lock path".
//
// A raw go-zookeeper client queues a contender node of the recipe's shape
// (mutex: "_c_<uuid>-lock-", rwlock: "<host>-W-", semaphore: its internal
// lock node) whose data copies ours, "sealed":true included (and the
// semaphore's "sole-lease" tag). It holds the lock. Our waiter queues behind
// it; then the node's data is changed and the node kept. The waiter must
// not enter. Variants:
//   - world-acl: the node's ACL is the world's (anyone may write it: it
//     was not sealed when the waiter read it), and a second raw client, not
//     the node's owner, writes it;
//   - second-writer: the node's ACL has the sealed shape (the world without
//     WRITE and ADMIN, the raw client's own digest identity with ALL) plus a
//     second digest identity with WRITE, and a client authenticated as that
//     second identity writes it;
//
// Not a variant: the sealed shape alone, written by its owner. A client
// that impersonates a session of ours this way (its own digest identity,
// our ACL's shape, our data) is what the waiter cannot tell from one of
// ours without a read after the change; internal/queue's await and
// docs/safety.md say so, and name the defence (the lock path's ACL);
//   - no-field (control): sealed-shaped ACL, our data without "sealed".
//
// Found by an outside user's attack test (all of world-acl and sealed-acl
// failed: the waiter entered 30-60 ms after the write, the node still
// there); the waiter now also reads its predecessor's ACL.
func TestForeignNodeClaimingSealedIsNotTrusted(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	type recipe struct {
		name   string
		parent string // below the lock path
		node   func(id string) string
		data   func(id string, sealed bool) string
		waiter string // newLocker's recipe
	}
	dataWith := func(tag string) func(id string, sealed bool) string {
		return func(id string, sealed bool) string {
			if sealed {
				return fmt.Sprintf(`{"id":%q,"host":"vm","pid":1%s,"sealed":true}`, id, tag)
			}
			return fmt.Sprintf(`{"id":%q,"host":"vm","pid":1%s}`, id, tag)
		}
	}
	curator := func(id string) string { return "_c_" + id + "-lock-" }
	writer := func(string) string { return "evil-W-" }
	recipes := []recipe{
		{"mutex", "", curator, dataWith(""), "mutex"},
		{"rwlock-reader", "", writer, dataWith(""), "rwlock-read"},
		{"rwlock-writer", "", writer, dataWith(""), "rwlock-write"},
		{"semaphoremutex", "/locks", curator, dataWith(`,"tag":"sole-lease"`), "semaphoremutex"},
	}
	variants := []struct {
		name                          string
		sealedACL, second, sealedData bool
	}{
		{"world-acl", false, false, true},
		{"second-writer", true, true, true},
		{"no-field", true, false, false},
	}
	for _, r := range recipes {
		for _, v := range variants {
			t.Run(r.name+"/"+v.name, func(t *testing.T) {
				f := f.In(t)
				ctx := ctxT(t, 20*time.Second)
				owner := f.Raw()
				writer := f.Raw() // someone else, for the world-acl variant
				path := f.Path("forged-") + r.name + "-" + v.name
				ensure(t, owner, zkWorld, f.Root(), path, path+r.parent)
				acl := zkWorld
				if v.sealedACL {
					require.NoError(t, owner.AddAuth("digest", []byte("evil:pw")))
					acl = append(zk.WorldACL(zk.PermRead|zk.PermCreate|zk.PermDelete), zk.DigestACL(zk.PermAll, "evil", "pw")...)
					writer = owner
				}
				if v.second {
					acl = append(acl, zk.DigestACL(zk.PermWrite, "other", "pw")...)
					writer = f.Raw()
					require.NoError(t, writer.AddAuth("digest", []byte("other:pw")))
				}
				id := "0b5e55ed-0000-4000-8000-000000000001"
				data := r.data(id, v.sealedData)
				node, err := owner.Create(path+r.parent+"/"+r.node(id), []byte(data), zkEphemeralSequential, acl)
				require.NoError(t, err)
				w := hold(ctx, newLocker(t, r.waiter, s, path, 0))
				waitFor(t, 10*time.Second, "our waiter's watch on the foreign holder's node", func() bool {
					return watched(f, 0, node)
				})
				_, err = writer.Set(node, []byte(data), -1)
				require.NoError(t, err)
				if _, ok := w.granted(t, 1500*time.Millisecond, "our waiter"); ok {
					t.Errorf("our waiter entered while the foreign holder's node %s exists=%v: two holders", node, exists(owner, node))
					return
				}
				require.NoError(t, owner.Delete(node, -1))
				w.wait(t, 15*time.Second, "our waiter after the foreign holder left")
				require.NoError(t, w.release())
			})
		}
	}
}

// TestMutexCountsForeignContenders checks mutex/doc.go: "Mutual
// exclusion among all processes using the lock path (Curator's
// InterProcessMutex, and the lock nodes of kazoo and go-zookeeper, count as
// contenders)": a raw client queues a node of each shape (ephemeral
// sequential, created first, so it holds): Curator / go-zookeeper
// "_c_<uuid>-lock-", kazoo's Lock "<uuid>__lock__". Our mutex must wait
// until the node goes, then enter. (A kazoo ReadLock node, "__rlock__", is
// ignored, as kazoo's own Lock ignores it; kazoo's WriteLock does not.)
func TestMutexCountsForeignContenders(t *testing.T) {
	foreignContenders(t, map[string]string{
		"curator-gozk": "_c_6f1d2a3b-0000-4000-8000-00000000000a-lock-",
		"kazoo-lock":   "6f1d2a3b00004000800000000000000a__lock__",
	})
}

func foreignContenders(t *testing.T, shapes map[string]string) {
	f := newFixture(t)
	s := f.Session()
	zc := f.Raw()
	for name, child := range shapes {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 15*time.Second)
			path := f.Path("foreign-") + name
			ensure(t, zc, zkWorld, f.Root(), path)
			node, err := zc.Create(path+"/"+child, []byte("127.0.0.1"), zkEphemeralSequential, zkWorld)
			require.NoError(t, err)
			m, _ := mutex.New(s, path)
			if _, ok, err := m.TryAcquire(ctx); ok || err != nil {
				if ok {
					_ = m.Release(ctx)
				}
				t.Fatalf("TryAcquire while a foreign %s node %s holds: ok=%v err=%v", name, node, ok, err)
			}
			h := hold(ctx, m)
			h.notGranted(t, 500*time.Millisecond, "Acquire returned while the foreign node holds")
			require.NoError(t, zc.Delete(node, -1))
			h.wait(t, 5*time.Second, "not granted 5 s after the foreign node went")
			require.NoError(t, h.release())
		})
	}
}

// TestMutexRevocableNodeForgedSealKeepsWaiterOut (passes) checks, with a
// revocable holder, mutex/doc.go: "No write into the holder's node lets
// anyone else in. ... a waiter trusts a data change as its predecessor's
// release only on a node that was sealed when it read it", and, for
// WithRevocable, "the holder keeps the mutex until it releases it" (and
// Revoke's "Nobody else gets the mutex until the holder releases it").
//
// A revocable node carries the world's ACL, so a bystander may write it.
// It first writes the sealed nodes' data (their "sealed":true tag) into the
// holder's node, then, once the waiter behind has read it and watches it,
// writes once more. The holder has not released.
func TestMutexRevocableNodeForgedSealKeepsWaiterOut(t *testing.T) {
	f, ctx := setUp(t, 25*time.Second)
	zc := f.Raw()
	path := f.Path("forged-seal")

	ma, err := mutex.New(f.Session(), path, lock.WithRevocable())
	require.NoError(t, err)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	defer ma.Release(context.WithoutCancel(ctx))

	// The bystander makes the revocable node look sealed.
	data, st, err := zc.Get(la.Path())
	require.NoError(t, err)
	forged := strings.TrimSuffix(string(data), "}") + `,"sealed":true}`
	_, err = zc.Set(la.Path(), []byte(forged), st.Version)
	require.NoError(t, err, "bystander's first write (allowed on a revocable node)")
	// ... and gives it a sealed node's ACL, with its own identity in the
	// place of the holder's.
	require.NoError(t, zc.AddAuth("digest", []byte("evil:pw")))
	sealedACL := append(zk.WorldACL(zk.PermRead|zk.PermCreate|zk.PermDelete), zk.DigestACL(zk.PermAll, "evil", "pw")...)
	_, err = zc.SetACL(la.Path(), sealedACL, -1)
	require.NoError(t, err, "bystander's setACL (allowed on a revocable node)")

	mb, err := mutex.New(f.Session(), path)
	require.NoError(t, err)
	hb := hold(ctx, mb)
	waitFor(t, 10*time.Second, "the waiter's watch on the holder's node", func() bool {
		return watched(f, 0, la.Path())
	})
	_, err = zc.Set(la.Path(), []byte(forged), -1)
	require.NoError(t, err, "bystander's second write")

	if lb, ok := hb.granted(t, 3*time.Second, "B"); ok {
		werr := guardedCreate(ctx, lb, f.Path("b-was-here"))
		t.Fatalf("two holders: B acquired %s while A (%s) still holds and never released; B's guarded write: %v; A's lease err: %v",
			lb.Path(), la.Path(), werr, la.Err())
	}
	// B still waits: the promise held.
	require.NoError(t, ma.Release(ctx))
	hb.wait(t, 10*time.Second, "B after A's release")
	require.NoError(t, hb.release())
}

// oddNames are children a bystander creates under a lock path: none is a
// lock node of any client library (no sequence number to parse).
var oddNames = []string{"y", "lock-", "_c_x-lock-", "_c_x-lock-abc", "h-W-", "h-R-xyz", "-latch-", "leases0", "locks0", "_c_-lease-zz"}

// TestOddChildrenUnderLockPathsAreIgnored checks that a bystander's
// children that are no lock node (names without a sequence number) neither
// block nor break a handoff between two sessions, for every recipe; and
// that Participants (mutex/doc.go's Participant: "a node that counts in the
// lock's queue") does not fail on them. The docs do not say how such
// children are treated (README: "Nothing is left behind", rwlock/doc.go:
// "Names are parsed from the right"); this pins that they are ignored.
func TestOddChildrenUnderLockPathsAreIgnored(t *testing.T) {
	f := newFixture(t)
	sa := f.Session()
	sb := f.Session()
	zc := f.Raw()
	type lister interface {
		Participants(context.Context) ([]lock.Participant, error)
	}
	participants := func(ctx context.Context, lk locker) error { _, err := lk.(lister).Participants(ctx); return err }
	cases := []struct {
		name  string
		dirs  []string // where the bystander puts odd children, below path
		a, b  string   // newLocker's recipes of A and B
		check func(ctx context.Context, a locker) error
	}{
		{"mutex", []string{""}, "mutex", "mutex", participants},
		{"rwlock", []string{""}, "rwlock-write", "rwlock-read", nil},
		{"semaphoremutex", []string{"", "/locks", "/leases"}, "semaphoremutex", "semaphoremutex", participants},
		{"semaphore-1", []string{"", "/locks", "/leases"}, "semaphore-1", "semaphore-1", nil},
		{"exclusive", []string{""}, "exclusive", "exclusive", nil},
		{"leader", []string{""}, "leader", "leader", func(ctx context.Context, a locker) error {
			e := a.(electionLocker).e
			if _, err := e.Participants(ctx); err != nil {
				return err
			}
			_, err := e.Leader(ctx)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := f.Path("odd-") + tc.name
			for _, d := range tc.dirs {
				dir := path + d
				ensure(t, zc, zkWorld, f.Root(), path, dir)
				for _, n := range oddNames {
					_, err := zc.Create(dir+"/"+n, []byte("odd"), 0, zkWorld)
					require.NoError(t, err, "bystander create %s/%s", dir, n)
				}
			}
			a, b := newLocker(t, tc.a, sa, path, 0), newLocker(t, tc.b, sb, path, 1)
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := a.Acquire(actx)
			if err == nil && tc.check != nil {
				err = tc.check(actx, a)
			}
			require.NoError(t, err, "A's acquire among odd children")
			hb := hold(actx, b) // B acquires and releases on one goroutine (mutex, rwlock)
			hb.notGranted(t, 300*time.Millisecond, "B got in (or failed) while A holds")
			require.NoError(t, a.Release(ctx), "A's release")
			hb.wait(t, 5*time.Second, "B's acquire after A's release")
			require.NoError(t, hb.release(), "B's release")
		})
	}
}

// TestReentryLostAfterExpiry: a goroutine holding the mutex twice
// (with and without local handoff) whose session expires: its re-entrant
// Acquire fails with ErrLeaseLost, two Releases return nil, a third
// ErrNotHeld, and a new Acquire gets a new lease; a local waiter queued
// meanwhile is granted only once the lock is free and never on the lost
// node.
func TestReentryLostAfterExpiry(t *testing.T) {
	for _, handoff := range []bool{false, true} {
		name := "plain"
		if handoff {
			name = "handoff"
		}
		t.Run(name, func(t *testing.T) {
			f, ctx := setUp(t, 40*time.Second)
			s := f.Session()
			path := f.Path("rexp")
			var opts []lock.Option
			if handoff {
				opts = append(opts, lock.WithLocalHandoff(3, 0))
			}
			m, err := mutex.New(s, path, opts...)
			require.NoError(t, err)
			results := make(chan string, 16)
			step := make(chan struct{})
			step2 := make(chan struct{})
			var l1 *conn.Lease
			go func() {
				defer close(results)
				var err error
				l1, err = m.Acquire(ctx)
				if err != nil {
					results <- "acquire: " + err.Error()
					return
				}
				if _, err := m.Acquire(ctx); err != nil {
					results <- "reenter: " + err.Error()
					return
				}
				results <- "held"
				<-step // the test expires the session
				<-l1.Lost()
				_, err = m.Acquire(ctx)
				if !errors.Is(err, conn.ErrLeaseLost) {
					results <- "re-entry after loss: " + errString(err) + " (want ErrLeaseLost)"
				}
				n := 0
				for i := 0; i < 4; i++ {
					err := m.Release(ctx)
					if err == nil {
						n++
						continue
					}
					if !errors.Is(err, lock.ErrNotHeld) {
						results <- "release: " + err.Error()
					}
					break
				}
				if n != 2 {
					results <- "releases that returned nil: " + strconv.Itoa(n) + " (want 2)"
				}
				results <- "released"
				<-step2 // G2 was granted and released
				l3, err := m.Acquire(ctx)
				if err != nil {
					results <- "fresh acquire: " + err.Error()
					return
				}
				if l3 == l1 || l3.Err() != nil {
					results <- "fresh acquire gave the lost lease"
				}
				if err := m.Release(ctx); err != nil {
					results <- "fresh release: " + err.Error()
				}
				results <- "end"
			}()
			require.Equal(t, "held", <-results)
			// a local waiter (handoff) or another contender of the session
			h2 := hold(ctx, m)
			h2.notGranted(t, 200*time.Millisecond, "G2 granted while G1 holds")
			f.Expire(ctx, l1.Epoch())
			close(step)
			for r := range results {
				if r == "released" {
					l2 := h2.wait(t, 10*time.Second, "G2")
					if l2.Epoch() == l1.Epoch() || l2.Err() != nil {
						t.Errorf("G2 granted in the expired epoch (or lost): %v", l2.Err())
					}
					require.NoError(t, h2.release())
					close(step2)
					continue
				}
				if r != "end" {
					t.Error(r)
				}
			}
			if !eventually(5*time.Second, func() bool { return countNodes(f.Raw(), path) == 0 }) {
				t.Errorf("nodes left: %v", children(f.Raw(), path))
			}
		})
	}
}

var _ = context.Background

// TestMutexReleaseErrorsSayPathOnce: mutex's Release errors say "mutex:
// release <path>: " and then the cause, the path once (package lock),
// with and without lock.WithLocalHandoff, with a guarded write in flight
// when the release's delete cannot be confirmed (lock.ErrReleasePending).
func TestMutexReleaseErrorsSayPathOnce(t *testing.T) {
	for _, c := range []struct {
		recipe   string
		inflight bool
	}{{"mutex", false}, {"mutex", true}, {"mutex-handoff", false}, {"mutex-handoff", true}} {
		t.Run(fmt.Sprintf("%s/inflight=%v", c.recipe, c.inflight), func(t *testing.T) {
			f := newFixture(t)
			path := f.Path("errs")
			err := pendingRelease(t, f, c.recipe, path, c.inflight)
			t.Logf("%v", err)
			releaseErrSaysPathOnce(t, err, "mutex", path, lock.ErrReleasePending)
		})
	}
}
