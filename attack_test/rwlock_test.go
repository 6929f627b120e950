package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// TestRWLockSharedListingsCancelStress checks rwlock's "Readers share,
// writers exclude", "Nothing is left behind: a failed, timed-out or
// cancelled acquire deletes its node" and "A fencing token per grant ...
// growing strictly in the order of the grants", with one session's shared
// listings: 2 sessions × 6 goroutines on one path, plain reads, plain
// writes and write-then-downgrade, a third of the acquires with a deadline
// of 5–60 ms (waiters leave one session's shared listing while others join).
// A ledger checks every entry; a writer's fence must be above every fence
// granted before, a reader's above the last writer's. At the end no node.
func TestRWLockSharedListingsCancelStress(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	path := f.Path("rw/lock")
	bys := f.Raw()
	var (
		mu             sync.Mutex
		readers        int
		writers        int
		maxF, lastW    conn.Fence
		grants, cancel int
	)
	enter := func(g int, write bool, downgrade bool, l *conn.Lease) {
		f, err := l.Fence(ctx)
		mu.Lock()
		defer mu.Unlock()
		grants++
		if err != nil {
			t.Errorf("g%d: fence: %v", g, err)
			return
		}
		switch {
		case write:
			if readers != 0 || writers != 0 {
				t.Errorf("g%d: writer entered beside %d readers, %d writers", g, readers, writers)
			}
			if f.Compare(maxF) <= 0 {
				t.Errorf("g%d: writer's fence %v not above %v", g, f, maxF)
			}
			writers++
			lastW = f
		case downgrade:
			readers++
		default:
			if writers != 0 {
				t.Errorf("g%d: reader entered beside a writer", g)
			}
			if f.Compare(lastW) <= 0 {
				t.Errorf("g%d: reader's fence %v not above the last writer's %v", g, f, lastW)
			}
			readers++
		}
		if f.Compare(maxF) > 0 {
			maxF = f
		}
	}
	leave := func(write bool) {
		mu.Lock()
		if write {
			writers--
		} else {
			readers--
		}
		mu.Unlock()
	}
	stop := time.Now().Add(7 * time.Second)
	mk := func(s *conn.Session) *rwlock.RWLock { return newRW(t, s, path) }
	onSessions(f, 2, 6, mk, func(rw *rwlock.RWLock, g int) {
		r := rand.New(rand.NewSource(int64(g)))
		rel := context.WithoutCancel(ctx)
		var kind int // 0 read, 1 write, 2 write then downgrade
		var k *rwlock.Lock
		acquire := func(ctx context.Context) (*conn.Lease, error) {
			kind, k = r.Intn(3), rw.ReadLock()
			if kind > 0 {
				k = rw.WriteLock()
			}
			return k.Acquire(ctx)
		}
		short, err := stressLoop(ctx, r, stop, 6*time.Second, acquire, func(l *conn.Lease) {
			enter(g, kind > 0, false, l)
			if kind == 2 {
				rl, derr := rw.ReadLock().Acquire(ctx)
				if derr != nil {
					t.Errorf("g%d: downgrade: %v", g, derr)
				} else {
					enter(g, false, true, rl)
				}
				leave(true)
				if err := rw.WriteLock().Release(rel); err != nil {
					t.Errorf("g%d: release W after downgrade: %v", g, err)
				}
				if derr == nil {
					leave(false)
					if err := rw.ReadLock().Release(rel); err != nil {
						t.Errorf("g%d: release downgraded R: %v", g, err)
					}
				}
				return
			}
			leave(kind > 0)
			if err := k.Release(rel); err != nil {
				t.Errorf("g%d: release: %v", g, err)
			}
		})
		if err != nil {
			t.Errorf("g%d: acquire: %v", g, err)
		}
		mu.Lock()
		cancel += short
		mu.Unlock()
	})
	t.Logf("%d grants, %d acquires timed out while queued", grants, cancel)
	waitFor(t, 10*time.Second, "no lock node left", func() bool { return len(children(bys, path)) == 0 })
}

// TestRWLockReaderAfterLockDirRecreated checks docs/safety.md's
// guarantee 1, "Never two holders inside ZooKeeper's view ... A waiter is
// granted only when, in the server's order of events, the node it waits for
// is gone (for a reader: no writer is left before it)", and rwlock's "A
// reader holds the lock when no W node sorts before its own", with
// CHANGELOG's new drain: "A woken waiter now decides from its session's
// latest listing less the nodes the session knows have left".
//
// rwlock's node names are "<host>-W-<seq10>" with the host name as host, so
// two sessions on one machine make the same names, and the server's
// sequence counter starts again at 0 when the lock's directory is created
// again (the lock path is a container node: ZooKeeper removes it when it is
// empty; here an operator deletes the empty directory, which the next
// acquire creates again). Pass 1: B writes (h-W-0000000000), A's reader
// waits behind and so learns that h-W-0000000000 left. Pass 2, in the new
// directory: B writes again, as h-W-0000000000; C's writer queues
// (h-W-0000000001); A's reader queues (h-R-0000000002) and waits on C's
// node. C gives up (a plain delete of a node of another session): A's
// reader must go on waiting for B's writer. If the session's view still
// takes h-W-0000000000 for gone, A reads while B writes.
func TestRWLockReaderAfterLockDirRecreated(t *testing.T) {
	f, ctx := setUp(t, 40*time.Second)
	path := f.Path("reuse/lock")
	zc := f.Raw()
	rwA, rwB, rwC := newRW(t, f.Session(), path), newRW(t, f.Session(), path), newRW(t, f.Session(), path)

	// Pass 1.
	_, err := rwB.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	a1 := hold(ctx, rwA.ReadLock())
	waitFor(t, 10*time.Second, "A's reader queued", func() bool { return len(children(zc, path)) == 2 })
	pass1 := children(zc, path)
	sort.Strings(pass1)
	require.NoError(t, rwB.WriteLock().Release(ctx))
	a1.wait(t, 10*time.Second, "A pass 1")
	require.NoError(t, a1.release())
	// The operator removes the empty lock directory (or the server's
	// container reaper does).
	waitFor(t, 10*time.Second, "empty directory", func() bool { return len(children(zc, path)) == 0 })
	if err := zc.Delete(path, -1); !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}

	// Pass 2.
	lb, err := rwB.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	hc := hold(cctx, rwC.WriteLock())
	waitFor(t, 10*time.Second, "C's writer queued", func() bool { return len(children(zc, path)) == 2 })
	a2 := hold(ctx, rwA.ReadLock())
	waitFor(t, 10*time.Second, "A's reader queued", func() bool { return len(children(zc, path)) == 3 })
	pass2 := children(zc, path)
	sort.Strings(pass2)
	t.Logf("pass 1 names %v, pass 2 names %v", pass1, pass2)
	ccancel()
	recv(t, hc.failed, 5*time.Second, "C's cancelled acquire did not return")
	waitFor(t, 10*time.Second, "C's node deleted", func() bool { return len(children(zc, path)) == 2 })

	l, granted := a2.granted(t, 2*time.Second, "A pass 2")
	if granted {
		t.Errorf("A's reader granted while B holds the write lock (B's Err %v, node exists: %v; A's Err %v)",
			lb.Err(), exists(zc, lb.Path()), l.Err())
	}
	require.NoError(t, rwB.WriteLock().Release(ctx))
	if !granted {
		a2.wait(t, 10*time.Second, "A pass 2 after B")
	}
	require.NoError(t, a2.release())
}

// TestRWLockSameNamesOnTwoPaths: rwlock's node names repeat across
// lock paths ("<host>-W-<seq10>", each path its own counter). One session's
// readers on two paths: on /y, A learns that h-W-0000000000 left (B's
// writer released); on /x, B's writer h-W-0000000000 still holds, C's writer
// h-W-0000000001 queued and A's reader h-R-0000000002 waits on it. C gives
// up: A's reader must keep waiting for B's writer on /x (docs/safety.md
// guarantee 1, rwlock's "A reader holds the lock when no W node sorts
// before its own").
func TestRWLockSameNamesOnTwoPaths(t *testing.T) {
	f, ctx := setUp(t, 40*time.Second)
	px := f.Path("two/x")
	py := f.Path("two/y")
	sa, sb := f.Session(), f.Session()
	zc := f.Raw()

	bx := hold(ctx, newRW(t, sb, px).WriteLock())
	bx.wait(t, 20*time.Second, "B's writer on x")
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	hc := hold(cctx, newRW(t, f.Session(), px).WriteLock())
	waitFor(t, 10*time.Second, "C queued on x", func() bool { return len(children(zc, px)) == 2 })
	ax := hold(ctx, newRW(t, sa, px).ReadLock())
	waitFor(t, 10*time.Second, "A queued on x", func() bool { return len(children(zc, px)) == 3 })

	by := hold(ctx, newRW(t, sb, py).WriteLock())
	by.wait(t, 20*time.Second, "B's writer on y")
	ay := hold(ctx, newRW(t, sa, py).ReadLock())
	waitFor(t, 10*time.Second, "A queued on y", func() bool { return len(children(zc, py)) == 2 })
	t.Logf("x: %v, y: %v", children(zc, px), children(zc, py))
	require.NoError(t, by.release())
	ay.wait(t, 10*time.Second, "A's reader on y")
	require.NoError(t, ay.release())
	ccancel()
	recv(t, hc.failed, 20*time.Second, "C's cancelled acquire did not return")
	waitFor(t, 10*time.Second, "C's node deleted", func() bool { return len(children(zc, px)) == 2 })
	if _, ok := ax.granted(t, 2*time.Second, "A's reader on x"); ok {
		t.Fatalf("A's reader on x granted while B's writer holds x (nodes %v)", children(zc, px))
	}
	require.NoError(t, bx.release())
	ax.wait(t, 10*time.Second, "A's reader on x, after B released")
	require.NoError(t, ax.release())
}

// writerBehind is the downgrade tests' scene: A, a session of its own (sA),
// holds the write lock of a path, and writer Q, of another session, queues
// behind it on a goroutine of its own (q), ended with the test.
type writerBehind struct {
	f    *fixture
	path string
	sA   *conn.Session
	rwA  *rwlock.RWLock
	wA   *conn.Lease
	q    *holder
}

// newWriterBehind sets the scene on path, with the rwlock options opts.
func newWriterBehind(t *testing.T, f *fixture, ctx context.Context, path string, opts ...lock.Option) *writerBehind {
	t.Helper()
	return writerBehindOf(t, f, ctx, ctx, f.Session(), path, opts...)
}

// writerBehindTest starts a fixture for t and sets the scene on name below
// its root; the test's ctx ends after d.
func writerBehindTest(t *testing.T, d time.Duration, name string) (*writerBehind, context.Context) {
	t.Helper()
	f, ctx := setUp(t, d)
	return newWriterBehind(t, f, ctx, f.Path(name)), ctx
}

// writerBehindOf sets the scene with A on session sA, A's write acquire
// under actx and Q's under qctx (their labels, say).
func writerBehindOf(t *testing.T, f *fixture, actx, qctx context.Context, sA *conn.Session, path string, opts ...lock.Option) *writerBehind {
	t.Helper()
	rwA := newRW(t, sA, path, opts...)
	rwQ := newRW(t, f.Session(), path, opts...)
	wA, err := rwA.WriteLock().Acquire(actx)
	require.NoError(t, err)
	qctx, cancel := context.WithCancel(qctx)
	q := hold(qctx, rwQ.WriteLock())
	t.Cleanup(func() { cancel(); <-q.done })
	waitFor(t, 10*time.Second, "the queued writer's W node", func() bool { return len(children(f.Raw(), path)) == 2 })
	return &writerBehind{f: f, path: path, sA: sA, rwA: rwA, wA: wA, q: q}
}

// downgradeKeepingW has A take the read lock and release the write lock:
// its W node is kept, as the queued writer stands between W and R.
func (w *writerBehind) downgradeKeepingW(t *testing.T, ctx context.Context) *conn.Lease {
	t.Helper()
	rA, err := w.rwA.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, w.rwA.WriteLock().Release(ctx))
	if !exists(w.f.Raw(), w.wA.Path()) {
		t.Fatal("the W node was not kept, though a writer is queued between W and R (doc: kept)")
	}
	return rA
}

// tryDowngrade has A take the read lock within d; a granted one is
// released when the test ends.
func (w *writerBehind) tryDowngrade(t *testing.T, ctx context.Context, d time.Duration) (*conn.Lease, error) {
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	rA, err := w.rwA.ReadLock().Acquire(rctx)
	if err == nil {
		t.Cleanup(func() { _ = w.rwA.ReadLock().Release(context.WithoutCancel(ctx)) })
	}
	return rA, err
}

// observed is the view of a new handle's Participants, node name to
// status.
func (w *writerBehind) observed(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	ps, err := newRW(t, w.f.Session(), w.path).Participants(ctx)
	require.NoError(t, err)
	return statusOf(ps)
}

// downgrade has rw's goroutine take the write lock, then the read lock.
func downgrade(t *testing.T, ctx context.Context, rw *rwlock.RWLock) (wl, rl *conn.Lease) {
	t.Helper()
	wl, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	rl, err = rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	return wl, rl
}

// TestRWLockDowngradeAfterForeignDeleteRefused checks
// rwlock/doc.go: "Readers share, writers exclude: while a writer holds the
// lock, no other contender (reader or writer, of any process using the lock
// path) holds it", with the downgrade of "# Downgrade" ("The read acquire
// queues a real R node, which is granted at once ...: nobody else can hold
// the lock while our W node exists. So the grant is made only if our W
// node still exists once the R node does ...: if someone else deleted it
// ..., the R node is deleted again and the acquire fails with
// conn.ErrLeaseLost") and the Errors section's "conn.ErrLeaseLost for a
// re-entry or downgrade on a lost lease".
//
// A holds the write lock and never looked at Lost. A bystander deletes A's W
// node (the parent's ACL lets anyone), so writer B, queued behind, gets the
// lock. A then takes the read lock (a downgrade): if it is granted, A reads
// while B writes, and A's read lease's guarded write commits, since its new
// R node exists. The downgrade must be refused with conn.ErrLeaseLost and
// leave no R node.
func TestRWLockDowngradeAfterForeignDeleteRefused(t *testing.T) {
	sc, ctx := writerBehindTest(t, 25*time.Second, "rw-downgrade")
	f, path := sc.f, sc.path
	require.NoError(t, f.Raw().Delete(sc.wA.Path(), -1), "bystander delete")
	lB := sc.q.wait(t, 10*time.Second, "B, after A's node was deleted")

	rA, err := sc.tryDowngrade(t, ctx, 3*time.Second)
	if err == nil {
		werr := guardedCreate(ctx, rA, f.Path("a-read-under-b"))
		t.Fatalf("A holds the read lock (%s) while B holds the write lock (%s); A's read guarded write: err=%v; B's lease err=%v",
			rA.Path(), lB.Path(), werr, lB.Err())
	}
	if !errors.Is(err, conn.ErrLeaseLost) {
		t.Fatalf("downgrade on a lost write lease: %v, want conn.ErrLeaseLost", err)
	}
	if kids := children(f.Raw(), path); len(kids) != 1 || kids[0] != zkpath.Base(lB.Path()) {
		t.Errorf("after the refused downgrade the queue is %v, want only B's node", kids)
	}
	_ = sc.rwA.WriteLock().Release(ctx)
}

// TestRWLockDowngradeAfterExpiryRefused is the same combination as
// TestRWLockDowngradeAfterForeignDeleteRefused with the
// write lease lost by a server-side expiry (zktest.ExpireEpoch) instead of
// a bystander's delete: rwlock/doc.go's "conn.ErrLeaseLost for a re-entry
// or downgrade on a lost lease". Once writer B holds, A's downgrade must
// not be granted.
func TestRWLockDowngradeAfterExpiryRefused(t *testing.T) {
	sc, ctx := writerBehindTest(t, 25*time.Second, "rw-downgrade-expiry")
	f := sc.f
	f.Expire(ctx, sc.wA.Epoch())
	sc.q.wait(t, 20*time.Second, "B, after A's expiry")
	rA, err := sc.tryDowngrade(t, ctx, 2*time.Second)
	if err == nil {
		t.Fatalf("downgrade granted (%s) on a write lease lost with its epoch, while B writes", rA.Path())
	}
	if !errors.Is(err, conn.ErrLeaseLost) {
		t.Errorf("downgrade on an expired write lease: %v, want conn.ErrLeaseLost", err)
	}
	_ = sc.rwA.WriteLock().Release(ctx)
}

// TestRWLockOtherGoroutineGetsNoDowngrade checks rwlock/doc.go:
// "Reentrancy per goroutine for both sides ... Another goroutine of the
// same process is a separate contender" against "# Downgrade" ("A goroutine
// that holds the write lock may take the read lock"): while goroutine G1
// holds the write lock, goroutine G2 of the same handle asking for the read
// lock is a reader like any other and must wait, through TryAcquire
// (false) and Acquire (deadline), also through a second handle on the same
// session.
func TestRWLockOtherGoroutineGetsNoDowngrade(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	s := f.Session()
	path := f.Path("rw-other-goroutine")
	rw, _ := rwlock.New(s, path)
	rw2, _ := rwlock.New(s, path)
	_, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	defer rw.WriteLock().Release(context.WithoutCancel(ctx))
	for name, h := range map[string]*rwlock.RWLock{"same handle": rw, "second handle": rw2} {
		res := make(chan string, 1)
		go func() {
			if _, ok, err := h.ReadLock().TryAcquire(ctx); ok || err != nil {
				if ok {
					_ = h.ReadLock().Release(ctx)
				}
				res <- "TryAcquire from another goroutine while G1 writes: granted or failed"
				return
			}
			actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			if _, err := h.ReadLock().Acquire(actx); !errors.Is(err, context.DeadlineExceeded) {
				if err == nil {
					_ = h.ReadLock().Release(ctx)
				}
				res <- "Acquire from another goroutine while G1 writes: " + errString(err)
				return
			}
			res <- ""
		}()
		if r := <-res; r != "" {
			t.Errorf("%s: %s", name, r)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "granted"
	}
	return err.Error()
}

// TestRWLockDowngradeFenceBeforeNextWriter checks conn.Fence (go
// doc ./conn Fence): "Fence is a fencing token that grows strictly with
// every grant of a lock ... A later grant has a greater Zxid, or the same
// Zxid and a greater Pass ... A resource that fences writes keeps the
// greatest Fence it has seen and refuses any below it", with
// rwlock/doc.go's "A fencing token per grant (Lease.Fence ...), growing
// strictly in the order of the grants ... Readers get tokens too" and its
// downgrade.
//
// Grants in this order: A's write lock; A's read lock (a downgrade, whose R
// node sorts after writer C's W node), released and taken again (a second
// downgrade under the same write grant); C's write lock, once A has
// released both. With the R node's czxid as its token, C's grant came last
// but had a smaller Fence than A's read grants, so a resource that saw A's
// read fence refused the next writer.
func TestRWLockDowngradeFenceBeforeNextWriter(t *testing.T) {
	sc, ctx := writerBehindTest(t, 20*time.Second, "rw-fence")
	rwA := sc.rwA
	fW := fenceOf(t, ctx, sc.wA)

	rA, err := rwA.ReadLock().Acquire(ctx) // downgrade
	require.NoError(t, err)
	fR1 := fenceOf(t, ctx, rA)
	require.NoError(t, rwA.ReadLock().Release(ctx))
	rA, err = rwA.ReadLock().Acquire(ctx) // a second downgrade
	require.NoError(t, err)
	fR := fenceOf(t, ctx, rA)
	require.NoError(t, rwA.WriteLock().Release(ctx))
	require.NoError(t, rwA.ReadLock().Release(ctx))
	lC := sc.q.wait(t, 10*time.Second, "C, after A released both")
	fC := fenceOf(t, ctx, lC)
	t.Logf("grants in order: A write %v, A read %v, A read again %v, C write %v", fW, fR1, fR, fC)
	if fW.Compare(fR1) >= 0 || fR1.Compare(fR) >= 0 || fR.Compare(fC) >= 0 {
		t.Fatalf("fences not strictly growing in grant order: A write %v, A read (downgrade) %v, A read again %v, C write %v: a resource that kept %v refuses C",
			fW, fR1, fR, fC, fR)
	}
}

// TestRWLockDowngradedReaderLostWithKeptWriteNode checks
// rwlock/doc.go: "The holder can always learn that the lock is no longer
// safe: Lease.Lost closes when the session's epoch ends ..., when the node
// is deleted by someone else, or on Release", for a read lock taken by a
// downgrade whose W node is kept ("If a writer is queued between them ...
// the W node is kept until the read lock is released").
//
// A holds the write lock, writer C queues, A takes the read lock (its R node
// sorts after C's W) and releases the write lock: the W node is kept, and it
// alone keeps C out. A arms its read lease's Lost. A bystander deletes the
// kept W node: C enters while A still reads. A's read lease must tell, and
// its guarded write must be refused.
func TestRWLockDowngradedReaderLostWithKeptWriteNode(t *testing.T) {
	sc, ctx := writerBehindTest(t, 25*time.Second, "rw-kept-w")
	f := sc.f
	rA := sc.downgradeKeepingW(t, ctx) // downgrade
	defer sc.rwA.ReadLock().Release(context.WithoutCancel(ctx))
	lost := rA.Lost() // armed
	sc.q.notGranted(t, 300*time.Millisecond, "C entered while A reads (before any bystander)")

	require.NoError(t, f.Raw().Delete(sc.wA.Path(), -1), "bystander delete of the kept W node")
	lC, ok := sc.q.granted(t, 10*time.Second, "C")
	if !ok {
		t.Skip("C did not enter after the kept W node was deleted: nothing to tell")
	}
	if _, ok := within(lost, 3*time.Second); ok { // A was told
		if err := guardedCreate(ctx, rA, f.Path("a-reads-under-c")); !errors.Is(err, conn.ErrLeaseLost) {
			t.Errorf("A's read lease is lost but its guarded write says %v, want conn.ErrLeaseLost", err)
		}
		return
	}
	werr := guardedCreate(ctx, rA, f.Path("a-reads-under-c"))
	t.Fatalf("writer C holds %s while A's read lease %s is not lost (Lost open 3 s after C entered, Err=%v) and its guarded write commits: err=%v",
		lC.Path(), rA.Path(), rA.Err(), werr)
}

// TestRWLockKeptWriteNodeCheckOpPasses checks connlink.Lease.CheckOp (go
// doc ./internal/connlink Lease.CheckOp): "the multi then commits only
// while the node the grant stands on (see Guard) exists, and the server
// refuses all of it once the node is gone" and "the check passes for a
// released grant while its node stays (... rwlock keeps the write node of
// a goroutine that downgraded, its write lease released, while a writer is
// queued between its two nodes): GuardedWrite checks Err first", with
// conn.Lease.GuardedWrite's "That node is the lease's own lock node, except
// for a read lock of package rwlock taken by a goroutine that holds the
// write lock (a downgrade), which stands on the write node until the write
// lock's release moves it onto its own node", and rwlock/doc.go's "the
// write lease is marked released all the same (its Lost closes, its
// GuardedWrite is refused)".
//
// (Found as a doc gap: the CheckOp doc named only local-handoff grants as
// passing after a release. A check is a request built at any time and sent
// later; it cannot know that the grant it was made for has been released,
// and the kept W node is what keeps writer C out, so the doc now says what
// happens.) After a downgrade whose W node is kept, the released write
// lease's Lost closes and its GuardedWrite is refused, a multi behind its
// CheckOp commits, and the read lease's CheckOp checks the kept W node;
// once the read lock is released, both checks are refused.
func TestRWLockKeptWriteNodeCheckOpPasses(t *testing.T) {
	sc, ctx := writerBehindTest(t, 20*time.Second, "rw-kept-checkop")
	f := sc.f
	wA := sc.wA
	rA := sc.downgradeKeepingW(t, ctx)
	if p := connlink.Of(rA).CheckOp().Path; p != wA.Path() {
		t.Errorf("the downgraded read lease's CheckOp checks %s while the W node %s is kept", p, wA.Path())
	}
	if _, ok := within(wA.Lost(), 2*time.Second); !ok {
		t.Error("the released write lease's Lost is open (doc: closes on Release)")
	}
	if err := guardedCreate(ctx, wA, f.Path("gw-after-w-release")); !errors.Is(err, conn.ErrLeaseLost) {
		t.Errorf("GuardedWrite through the released write lease: %v, want conn.ErrLeaseLost", err)
	}
	if _, err := connlink.Of(wA.Epoch()).Multi(ctx, connlink.Of(wA).CheckOp(), &zk.CreateRequest{Path: f.Path("checkop-after-w-release"), Acl: zkWorld}); err != nil {
		t.Errorf("a multi behind the released write lease's CheckOp while its W node is kept: %v, want it to commit (documented)", err)
	}
	require.NoError(t, sc.rwA.ReadLock().Release(ctx))
	for name, l := range map[string]*conn.Lease{"write": wA, "read": rA} {
		_, err := connlink.Of(l.Epoch()).Multi(ctx, connlink.Of(l).CheckOp(), &zk.CreateRequest{Path: f.Path("checkop-after-release-") + name, Acl: zkWorld})
		if !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("a multi behind the %s lease's CheckOp after the read release: %v, want zk.ErrNoNode", name, err)
		}
	}
}

// TestRWLockKeptWNodeGoesWhenReadLeaseLost checks lock's contract
// (go doc ./lock): "Release after loss (Lost closed) returns nil: the node
// went with its session, or someone deleted it; there is nothing left to
// release", and rwlock/doc.go's "the read release deletes the R node, then
// the W node" for a downgrade whose W node is kept, and "Nothing is left
// behind".
//
// A downgrades while writer C is queued between its W and R nodes, so the W
// node is kept. A bystander deletes A's R node; A's read lease is lost (A
// watches Lost) and A releases the read lock: nil. The kept W node is not
// the R node: it must go too, or C (and everyone behind) waits for as long
// as A's session lives. Two variants: A armed Lost and saw it close, or A
// never looked (its release's delete finds the R node gone).
func TestRWLockKeptWNodeGoesWhenReadLeaseLost(t *testing.T) {
	newFixture(t).Each(t, []string{"armed", "unarmed"}, keptWAfterReadLost)
}

func keptWAfterReadLost(t *testing.T, f *fixture, name string) {
	armed := name == "armed"
	ctx := ctxT(t, 20*time.Second)
	sc := newWriterBehind(t, f, ctx, fmt.Sprintf("%s/rw-kept-left-%v", f.Root(), armed))
	rA := sc.downgradeKeepingW(t, ctx)
	var lost <-chan struct{}
	if armed {
		lost = rA.Lost()
		waitFor(t, 5*time.Second, "the read lease's watch", func() bool { return watched(f, 0, rA.Path()) })
	}
	require.NoError(t, f.Raw().Delete(rA.Path(), -1))
	if armed {
		recv(t, lost, 5*time.Second, "read lease's Lost open 5 s after its node was deleted")
	}
	relErr := sc.rwA.ReadLock().Release(ctx)
	if _, ok := sc.q.granted(t, 3*time.Second, "C"); ok {
		return // the kept W node went: C entered
	}
	t.Fatalf("A's read release returned %v; 3 s later A's kept W node %s exists=%v and writer C still waits (A holds nothing)", relErr, sc.wA.Path(), exists(f.Raw(), sc.wA.Path()))
}

// TestRWLockExtraReleasesAroundKeptWNode checks rwlock/doc.go:
// "Release from a goroutine that does not hold that side, or more often
// than acquired, is an error, never a panic, and changes nothing", around a
// downgrade whose W node is kept: extra write releases (ErrNotHeld), an
// upgrade attempt (ErrUpgrade, "refused even while the W node is kept"), a
// release from another goroutine (ErrNotOwner or ErrNotHeld) — none may
// delete the kept W node or let writer C in; the read release then lets C
// in and leaves none of A's nodes.
func TestRWLockExtraReleasesAroundKeptWNode(t *testing.T) {
	sc, ctx := writerBehindTest(t, 20*time.Second, "rw-extra-release")
	f := sc.f
	rwA := sc.rwA
	rA := sc.downgradeKeepingW(t, ctx)
	if err := rwA.WriteLock().Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second write release: %v, want ErrNotHeld", err)
	}
	if _, err := rwA.WriteLock().Acquire(ctx); !errors.Is(err, rwlock.ErrUpgrade) {
		t.Errorf("write acquire while holding only the read lock (W kept): %v, want ErrUpgrade", err)
	}
	other := make(chan [2]error, 1)
	go func() {
		other <- [2]error{rwA.ReadLock().Release(ctx), rwA.WriteLock().Release(ctx)}
	}()
	for i, err := range <-other {
		if !errors.Is(err, lock.ErrNotOwner) && !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("release %d from another goroutine: %v, want ErrNotOwner/ErrNotHeld", i, err)
		}
	}
	mine := []string{sc.wA.Path(), rA.Path()}
	for _, p := range mine {
		if !exists(f.Raw(), p) {
			t.Errorf("%s gone after refused releases", p)
		}
	}
	sc.q.notGranted(t, 300*time.Millisecond, "C entered while A reads")
	require.NoError(t, rwA.ReadLock().Release(ctx))
	if err := rwA.ReadLock().Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second read release: %v, want ErrNotHeld", err)
	}
	sc.q.wait(t, 5*time.Second, "C, after A's read release")
	for _, p := range mine {
		if exists(f.Raw(), p) {
			t.Errorf("%s left after A released everything", p)
		}
	}
}

// TestRWLockDowngradeStress checks rwlock/doc.go: "Readers share,
// writers exclude: while a writer holds the lock, no other contender ...
// holds it" together with "# Downgrade" (hold W, take R, release W: still a
// reader; the W node kept while a writer is queued between), under load:
// 3 sessions × 3 goroutines, each looping over plain reads, plain writes
// and write-then-downgrade, for 4 s. An in-process ledger (readers,
// writers) is checked at every entry.
func TestRWLockDowngradeStress(t *testing.T) {
	f := newFixture(t)
	path := f.Path("rw-stress")
	var mu sync.Mutex
	readers, writers := 0, 0
	violation := make(chan string, 16)
	// ledger moves the counts by dr readers and dw writers, then checks
	// them for the entry who ("" for a leave: nothing to check).
	ledger := func(dr, dw int, who string) {
		mu.Lock()
		defer mu.Unlock()
		readers += dr
		writers += dw
		if who != "" && (writers > 1 || (writers == 1 && readers > 0)) {
			select {
			case violation <- fmt.Sprintf("%s: writers=%d readers=%d", who, writers, readers):
			default:
			}
		}
	}
	ctx := ctxT(t, 25*time.Second)
	stop := time.Now().Add(4 * time.Second)
	var counts [3]int
	var cmu sync.Mutex
	mk := func(s *conn.Session) *rwlock.RWLock { return newRW(t, s, path) }
	onSessions(f, 3, 3, mk, func(rw *rwlock.RWLock, i int) {
		id, r := fmt.Sprintf("s%dg%d", i/3, i%3), rand.New(rand.NewSource(int64(i/3*10+i%3)))
		// ok reports err (of what) and whether there was none.
		ok := func(what string, err error) bool {
			if err != nil {
				t.Errorf("%s %s: %v", id, what, err)
			}
			return err == nil
		}
		for time.Now().Before(stop) {
			hold := func() { time.Sleep(time.Duration(r.Intn(3)) * time.Millisecond) }
			kind := r.Intn(3)
			switch kind {
			case 0: // read
				if _, err := rw.ReadLock().Acquire(ctx); !ok("read", err) {
					return
				}
				ledger(1, 0, id+" read")
				hold()
				ledger(-1, 0, "")
				if !ok("read release", rw.ReadLock().Release(ctx)) {
					return
				}
			case 1, 2: // write, or write then downgrade
				if _, err := rw.WriteLock().Acquire(ctx); !ok("write", err) {
					return
				}
				ledger(0, 1, id+" write")
				hold()
				downgraded := 0
				if kind == 2 {
					if _, err := rw.ReadLock().Acquire(ctx); !ok("downgrade", err) {
						return
					}
					downgraded = 1
				}
				ledger(downgraded, -1, "")
				if !ok("write release", rw.WriteLock().Release(ctx)) {
					return
				}
				if kind == 2 {
					hold()
					ledger(0, 0, id+" downgraded")
					ledger(-1, 0, "")
					if !ok("downgraded read release", rw.ReadLock().Release(ctx)) {
						return
					}
				}
			}
			cmu.Lock()
			counts[kind]++
			cmu.Unlock()
		}
	})
	close(violation)
	for v := range violation {
		t.Errorf("exclusion broken: %s", v)
	}
	t.Logf("reads %d, writes %d, downgrades %d", counts[0], counts[1], counts[2])
	zc := f.Raw()
	waitFor(t, 5*time.Second, "no node left", func() bool { return countNodes(zc, path) == 0 })
}

// statusOf maps each participant's node name to "holds" or "waits".
func statusOf(ps []lock.Participant) map[string]string {
	m := map[string]string{}
	for _, p := range ps {
		s := "waits"
		if p.Holding {
			s = "holds"
		}
		m[zkpath.Base(p.Node)] = s
	}
	return m
}

// TestRWLockParticipantsShowDowngradeKeptAndReentrantReads checks the
// CHANGELOG's "rwlock.RWLock.Participants. It and zkrecipes locks show a
// downgrade's read node as holding, and the write node kept for it after
// the write release as kept (not holding)", with a writer queued between
// the two nodes and the read lock taken twice (re-entrant): after the first
// read release the view is unchanged and the writer still waits; after the
// second A's nodes are gone and the writer holds.
func TestRWLockParticipantsShowDowngradeKeptAndReentrantReads(t *testing.T) {
	sc, ctx := writerBehindTest(t, 30*time.Second, "rw-parts")
	f, path := sc.f, sc.path
	rA := sc.downgradeKeepingW(t, ctx)
	_, err := sc.rwA.ReadLock().Acquire(ctx) // re-entry
	require.NoError(t, err)
	wName, rName := zkpath.Base(sc.wA.Path()), zkpath.Base(rA.Path())
	var qName string
	for _, ch := range children(f.Raw(), path) {
		if ch != wName && ch != rName {
			qName = ch
		}
	}
	view := func(when string, want, wantCLI map[string]string) {
		t.Helper()
		require.Equal(t, want, sc.observed(t, ctx), "Participants %s", when)
		if got := cliStatus(t, f, path); got != nil {
			require.Equal(t, wantCLI, got, "zkrecipes locks %s", when)
		}
	}
	view("after the downgrade",
		map[string]string{wName: "waits", qName: "waits", rName: "holds"},
		map[string]string{wName: "kept", qName: "waits", rName: "holds"})
	require.NoError(t, sc.rwA.ReadLock().Release(ctx))
	sc.q.notGranted(t, 300*time.Millisecond, "the writer between got in while A still holds one read")
	view("after one of two read releases",
		map[string]string{wName: "waits", qName: "waits", rName: "holds"},
		map[string]string{wName: "kept", qName: "waits", rName: "holds"})
	require.NoError(t, sc.rwA.ReadLock().Release(ctx))
	sc.q.wait(t, 10*time.Second, "the writer between, after A's last read release")
	view("after the last read release",
		map[string]string{qName: "holds"},
		map[string]string{qName: "holds"})
}

// TestRWLockParticipantsAfterDowngraderExpires: A downgrades with a writer
// queued between (W kept) and its session expires on the server. The writer
// gets in, both views show it alone holding, and A's read Release returns
// nil ("A lost lease is released without error").
func TestRWLockParticipantsAfterDowngraderExpires(t *testing.T) {
	sc, ctx := writerBehindTest(t, 30*time.Second, "rw-parts-exp")
	f, path := sc.f, sc.path
	lost := sc.downgradeKeepingW(t, ctx).Lost()
	f.Expire(ctx, epochOf(t, sc.sA))
	lQ := sc.q.wait(t, 15*time.Second, "the writer between, after A's session expired")
	recv(t, lost, 10*time.Second, "A's read lease not lost 10 s after its session expired")
	want := map[string]string{zkpath.Base(lQ.Path()): "holds"}
	require.Equal(t, want, sc.observed(t, ctx))
	if got := cliStatus(t, f, path); got != nil {
		require.Equal(t, want, got)
	}
	require.NoError(t, sc.rwA.ReadLock().Release(ctx), "read release after the loss")
}

// TestRWLockViewAfterKeptWriteNodeDeleted: a bystander deletes the kept W
// node; the writer between gets in and A's read lease is lost. The views
// (Participants, zkrecipes locks) must not show a writer and a reader both
// holding ("readers share, writers exclude").
func TestRWLockViewAfterKeptWriteNodeDeleted(t *testing.T) {
	sc, ctx := writerBehindTest(t, 30*time.Second, "rw-parts-del")
	f, path := sc.f, sc.path
	rA := sc.downgradeKeepingW(t, ctx)
	defer sc.rwA.ReadLock().Release(context.WithoutCancel(ctx))
	lost := rA.Lost()
	require.NoError(t, f.Raw().Delete(sc.wA.Path(), -1))
	lQ := sc.q.wait(t, 10*time.Second, "the writer between, after the kept W node was deleted")
	recv(t, lost, 5*time.Second, "A's read lease not lost after its kept W node was deleted")
	w, r := zkpath.Base(lQ.Path()), zkpath.Base(rA.Path())
	got := sc.observed(t, ctx)
	t.Logf("Participants: %v (writer %s, A's lost read %s)", got, w, r)
	cli := cliStatus(t, f, path)
	t.Logf("zkrecipes locks: %v", cli)
	for view, st := range map[string]map[string]string{"Participants": got, "zkrecipes locks": cli} {
		if st[r] == "holds" && st[w] == "holds" {
			t.Errorf("%s shows writer %s and reader %s both holding", view, w, r)
		}
	}
}

// TestKeptWriteNodeSetACLCountedAndViewsLeaveNoWatch checks the
// CHANGELOG's "The kept node's ACL is set again, unchanged (counted as
// metrics.OpSetACL)": one setacl when the W node is kept, none for a
// downgrade with no writer between; and that Participants, "a snapshot",
// leaves no watch on the servers (wchc) nor in the session's watches gauge.
func TestKeptWriteNodeSetACLCountedAndViewsLeaveNoWatch(t *testing.T) {
	sc, ctx := writerBehindTest(t, 30*time.Second, "rw-setacl")
	f, path := sc.f, sc.path
	sA := sc.sA
	before := connlink.Of(sA).Stats().Requests[metrics.OpSetACL]
	sc.downgradeKeepingW(t, ctx)
	require.Equal(t, before+1, connlink.Of(sA).Stats().Requests[metrics.OpSetACL], "setacl requests after the write release that kept W")

	// no writer between: no setacl
	s2 := f.Session()
	rw2 := newRW(t, s2, f.Path("rw-setacl-2"))
	downgrade(t, ctx, rw2)
	require.NoError(t, rw2.WriteLock().Release(ctx))
	require.Zero(t, connlink.Of(s2).Stats().Requests[metrics.OpSetACL], "setacl with no writer between")
	require.NoError(t, rw2.ReadLock().Release(ctx))

	m := &metricsRec{}
	sO := f.Session(conn.WithMetrics(m.Hooks()))
	rwO := newRW(t, sO, path)
	for i := 0; i < 3; i++ {
		ps, err := rwO.Participants(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 3)
	}
	require.Zero(t, m.watches.Load(), "watches gauge after Participants")
	require.Empty(t, sessionWatches(t, f, 0, epochOf(t, sO).SessionID()), "server watches of the observer after Participants")
	require.NoError(t, sc.rwA.ReadLock().Release(ctx))
	sc.q.wait(t, 10*time.Second, "the writer between")
}

// TestRWLockDowngradeNodesCarryTheirAcquiresLabels: the write node carries
// the write acquire's label and keeps it when kept; the downgrade's read
// node, a node of its own, carries the read acquire's (WithLabel: "writes
// it into the node it creates"; only a re-entry or a local handoff keeps
// the creator's label).
func TestRWLockDowngradeNodesCarryTheirAcquiresLabels(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	path := f.Path("rw-labels")
	sc := writerBehindOf(t, f, lock.WithLabel(ctx, "writer-a"), lock.WithLabel(ctx, "writer-q"), f.Session(), path)
	rwA := sc.rwA
	rA, err := rwA.ReadLock().Acquire(lock.WithLabel(ctx, "reader-a"))
	require.NoError(t, err)
	_, err = rwA.ReadLock().Acquire(lock.WithLabel(ctx, "reader-a-again"))
	require.NoError(t, err)
	require.NoError(t, rwA.WriteLock().Release(ctx))
	ps, err := rwA.Participants(ctx)
	require.NoError(t, err)
	got := map[string]string{}
	for _, p := range ps {
		got[zkpath.Base(p.Node)] = p.Label
	}
	want := map[string]string{zkpath.Base(sc.wA.Path()): "writer-a", zkpath.Base(rA.Path()): "reader-a"}
	for n, l := range want {
		require.Equal(t, l, got[n], "label of %s (all: %v)", n, got)
	}
	require.NoError(t, rwA.ReadLock().Release(ctx))
	require.NoError(t, rwA.ReadLock().Release(ctx))
	sc.q.wait(t, 10*time.Second, "Q")
}

// TestRWLockDowngradeBlackholedKeepsDeadlineLeavesNothing: the write
// holder's downgrade (a read acquire, which "queues a real R node") is
// blackholed right after its create (or its exists check) leaves: rwlock's
// "A deadline is kept" (back 250 ms after ctx at the latest) and "Nothing
// is left behind" (its R node deleted once the connection is back); the
// write lock stays held (only the read acquire failed), one write release
// frees the lock, and no watch of the session is left on the server.
func TestRWLockDowngradeBlackholedKeepsDeadlineLeavesNothing(t *testing.T) {
	f := newFixture(t)
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("after-write-%d", n), func(t *testing.T) {
			f := f.In(t)
			ctx := ctxT(t, 40*time.Second)
			p, s := f.ProxiedSession(conn.WithSessionTimeout(20 * time.Second))
			path := f.Path(fmt.Sprintf("rw-dg-bh-%d", n))
			rw := newRW(t, s, path)
			wl, err := rw.WriteLock().Acquire(ctx)
			require.NoError(t, err)
			p.BlackholeAfterWrites(n)
			took, err := timed(ctx, 700*time.Millisecond, acquireErr(rw.ReadLock()))
			t.Logf("downgrade blackholed after write %d: %v after %v", n, err, took)
			p.Heal()
			if err == nil {
				// granted before the fault mattered: release it
				require.NoError(t, rw.ReadLock().Release(ctx))
			} else {
				require.Less(t, took, 950*time.Millisecond, "deadline kept")
				require.True(t, errors.Is(err, context.DeadlineExceeded), "error %v", err)
			}
			waitFor(t, 15*time.Second, "only the W node left", func() bool {
				kids := children(f.Raw(), path)
				return len(kids) == 1 && kids[0] == zkpath.Base(wl.Path())
			})
			require.True(t, rw.WriteLock().IsOwnedByCurrentGoroutine(), "the write lock is still held")
			if err != nil {
				require.ErrorIs(t, rw.ReadLock().Release(ctx), lock.ErrNotHeld, "the failed downgrade counted nothing")
			}
			require.NoError(t, rw.WriteLock().Release(ctx))
			require.Empty(t, children(f.Raw(), path))
			noWatchesLeft(t, f, s, 3*time.Second, "the session")
		})
	}
}

// TestRWLockDowngradeArmedLostAcrossWriteRelease: the downgrade's read
// lease arms Lost while it stands on the W node. (1) No writer between:
// the write release moves the grant onto the R node and deletes the W node
// itself: Lost must stay open (our own delete is no loss), then close when
// a bystander deletes the R node. (2) A writer between: the W node is
// kept; after the read release nothing is left: no node, the session's
// watches gauge (metrics.Hooks.Watches) back to 0 and no watch on the
// server (wchc).
func TestRWLockDowngradeArmedLostAcrossWriteRelease(t *testing.T) {
	newFixture(t).Each(t, []string{"moved", "kept"}, func(t *testing.T, f *fixture, name string) {
		writerBetween := name == "kept"
		ctx := ctxT(t, 30*time.Second)
		m := &metricsRec{}
		s := f.Session(conn.WithMetrics(m.Hooks()))
		path := f.Path("rw-armed-" + name)
		var rw *rwlock.RWLock
		var q *holder
		if writerBetween {
			sc := writerBehindOf(t, f, ctx, ctx, s, path)
			rw, q = sc.rwA, sc.q
		} else {
			rw = newRW(t, s, path)
			_, err := rw.WriteLock().Acquire(ctx)
			require.NoError(t, err)
		}
		rl, err := rw.ReadLock().Acquire(ctx)
		require.NoError(t, err)
		lost := rl.Lost()
		require.NoError(t, rw.WriteLock().Release(ctx))
		if _, ok := within(lost, 500*time.Millisecond); ok {
			t.Fatalf("the read lease is lost after our own write release (writer between: %v) (Err=%v)", writerBetween, rl.Err())
		}
		if writerBetween {
			require.NoError(t, rw.ReadLock().Release(ctx))
			q.wait(t, 10*time.Second, "Q")
		} else {
			kids := children(f.Raw(), path)
			require.Len(t, kids, 1)
			require.NoError(t, f.Raw().Delete(path+"/"+kids[0], -1), "bystander deletes the R node")
			recv(t, lost, 5*time.Second, "the moved read lease is not lost 5 s after its R node was deleted")
			require.NoError(t, rw.ReadLock().Release(ctx))
		}
		m.gaugeDrains(t, 3*time.Second)
		noWatchesLeft(t, f, s, 3*time.Second, "the session")
	})
}

// TestRWLockWriterShownHoldingAfterBystanderSetACL: the `kept` mark is the
// W node's ACL version (docs/operations.md). A revocable writer's node
// keeps the session's ACL; if that ACL lets a bystander set the node's
// ACL, the holder's W node must still be shown holding by Participants
// and zkrecipes locks, and the writer behind must still wait.
func TestRWLockWriterShownHoldingAfterBystanderSetACL(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	path := f.Path("rw-setacl-forge")
	rw := newRW(t, f.Session(), path, lock.WithRevocable())
	wl, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	acl, st, err := f.Raw().GetACL(wl.Path())
	require.NoError(t, err)
	t.Logf("W node ACL %v (aversion %d)", acl, st.Aversion)
	if _, err := f.Raw().SetACL(wl.Path(), acl, -1); err != nil {
		t.Skipf("the bystander cannot set the W node's ACL (%v): nothing to forge", err)
	}
	ps, err := newRW(t, f.Session(), path).Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	if !ps[0].Holding {
		t.Errorf("Participants shows the write lock's holder %s not holding after a bystander's setacl", zkpath.Base(wl.Path()))
	}
	if got := cliStatus(t, f, path); got != nil && got[zkpath.Base(wl.Path())] != "holds" {
		t.Errorf("zkrecipes locks shows the write lock's holder as %q after a bystander's setacl", got[zkpath.Base(wl.Path())])
	}
	require.NoError(t, rw.WriteLock().Release(ctx))
}

// TestRWLockRevokeOfKeptWriteNode: revocable rwlock; A downgrades while Q
// is queued between, so A's W node is kept and A's read grant stands on
// it. A third session revokes the kept W node (lock.Revoke writes its mark into
// the node's data, which Q, a revocable waiter, reads again after every
// data change). Q must not get in while A reads; Participants must still
// show W kept, A's R holding, Q waiting; and A's read lease, the grant
// standing on that node, is the holder Revoke asks (Lease.Revoked).
func TestRWLockRevokeOfKeptWriteNode(t *testing.T) {
	newFixture(t).Each(t, []string{"armed-before-write-release", "armed-after"}, revokeKeptW)
}

func revokeKeptW(t *testing.T, f *fixture, name string) {
	armEarly := name == "armed-before-write-release"
	ctx := ctxT(t, 30*time.Second)
	path := f.Path(fmt.Sprintf("rw-rev-kept-%v", armEarly))
	sc := newWriterBehind(t, f, ctx, path, lock.WithRevocable())
	rA, err := sc.rwA.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	if armEarly {
		_ = rA.Revoked()
	}
	require.NoError(t, sc.rwA.WriteLock().Release(ctx))
	revoked := rA.Revoked()
	require.True(t, exists(f.Raw(), sc.wA.Path()), "W kept")
	sO := f.Session()
	rwO := newRW(t, sO, path, lock.WithRevocable())
	require.NoError(t, lock.Revoke(ctx, sO, sc.wA.Path()))
	sc.q.notGranted(t, time.Second, "Q got the write lock after a revoke request on the kept W node, while A still reads")
	ps, err := rwO.Participants(ctx)
	require.NoError(t, err)
	st := statusOf(ps)
	t.Logf("after Revoke of the kept W node: %v", st)
	require.Equal(t, "waits", st[zkpath.Base(sc.wA.Path())], "the kept W node holds nothing")
	require.Equal(t, "holds", st[zkpath.Base(rA.Path())], "A's R node")
	if got := cliStatus(t, f, path); got[zkpath.Base(sc.wA.Path())] != "kept" {
		t.Errorf("zkrecipes locks shows the revoked kept W node as %q, want kept (all: %v)", got[zkpath.Base(sc.wA.Path())], got)
	}
	if _, ok := within(revoked, 3*time.Second); !ok {
		t.Errorf("A's read lease, standing on the kept W node, did not see the revoke request")
	}
	require.NoError(t, sc.rwA.ReadLock().Release(ctx))
	sc.q.wait(t, 10*time.Second, "Q after A's read release")
}

// TestRWLockHostsNamingTheOtherSide: rwlock.WithHost accepts any non-empty
// host without '/' that ZooKeeper accepts, and "a writer holds it alone,
// with no reader"; Session.Set "refuses ... a node named as a lock's
// contender". A writer whose host itself reads like a node name of the
// other side ("x-R-y", "-R-0000000001", ...) holds; a reader and a writer
// of other sessions (default host) must stay out while it holds, its own
// session's Set into its node must be refused, and both get in after.
func TestRWLockHostsNamingTheOtherSide(t *testing.T) {
	hosts := []string{"x-R-y", "-R-0000000001", "a-R-", "R", "h-W-0000000001-R-0000000002", "_c_0123456789abcdef0123456789abcdef-latch-"}
	newFixture(t).Each(t, hosts, func(t *testing.T, f *fixture, host string) {
		ctx := ctxT(t, 30*time.Second)
		path := f.Path("oddhost/rw")
		s := f.Session()
		rw, err := rwlock.New(s, path, rwlock.WithHost(host))
		if errors.Is(err, conn.ErrInvalidArgument) {
			t.Skipf("WithHost(%q) refused: %v", host, err)
		}
		require.NoError(t, err)
		wl, err := rw.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		t.Logf("writer's node %s", wl.Path())
		r := hold(ctx, newRW(t, f.Session(), path).ReadLock())
		w := hold(ctx, newRW(t, f.Session(), path).WriteLock())
		waitFor(t, 10*time.Second, "both queued", func() bool { return len(children(f.Raw(), path)) == 3 })
		if _, err := s.Set(ctx, wl.Path(), []byte("x"), -1); !errors.Is(err, conn.ErrInvalidArgument) {
			t.Errorf("Session.Set into the writer's own node %s: %v, want ErrInvalidArgument", wl.Path(), err)
		}
		r.notGranted(t, 2*time.Second, "a reader was granted while the writer "+wl.Path()+" holds")
		w.notGranted(t, 100*time.Millisecond, "a writer was granted while the writer "+wl.Path()+" holds")
		require.NoError(t, rw.WriteLock().Release(ctx))
		r.wait(t, 10*time.Second, "reader after the release")
		require.NoError(t, r.release())
		w.wait(t, 10*time.Second, "writer after the reader")
		require.NoError(t, w.release())
	})
}

// TestRWLockHostsZooKeeperRejectsRefusedByNew: rwlock.WithHost: "non-empty,
// no '/', only characters ZooKeeper accepts in a path, else New fails with
// conn.ErrInvalidArgument". For hosts with characters ZooKeeper rejects
// (controls, U+007F to U+009F, U+D800 to U+F8FF, U+FFF0 to U+FFFF) or that
// are not UTF-8 (the server would read another name than ours), New must
// fail so. A host New takes must make an acquire that holds, on a node
// named with that host, and leaves nothing after the release.
func TestRWLockHostsZooKeeperRejectsRefusedByNew(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	s := f.Session()
	bad := []string{"", "a/b", "a\x00b", "a\nb", "a\tb", "a\u007fb", "a\u0085b", "a\ue000b", "a\uf8ffb", "a\ufff0b", "a\uffffb", "a\xffb", "\xc3"}
	for i, host := range bad {
		path := f.Path(fmt.Sprintf("badhost/%d", i))
		rw, err := rwlock.New(s, path, rwlock.WithHost(host))
		if errors.Is(err, conn.ErrInvalidArgument) {
			continue
		}
		if err != nil {
			t.Errorf("WithHost(%q): %v, want ErrInvalidArgument", host, err)
			continue
		}
		d, err := timed(ctx, 3*time.Second, acquireErr(rw.WriteLock()))
		t.Errorf("WithHost(%q) taken by New; its write acquire: %v after %v; nodes %q", host, err, d, children(f.Raw(), path))
		if err == nil {
			_ = rw.WriteLock().Release(ctx)
		}
		if n := countNodes(f.Raw(), path); n != 0 {
			t.Errorf("WithHost(%q): %d nodes left: %q", host, n, children(f.Raw(), path))
		}
	}
}

// TestDowngradeWriteReleaseAnswersLost: A holds the write lock and
// downgrades, with (between) or without (alone) a writer C queued between
// its write and read nodes; the answer of the n-th request of A's write
// release is lost. Design ("Downgrading a write lock"): C must not get in
// while A reads; the read lease stays held; after A's read release C gets
// in and nothing of A's is left.
func TestDowngradeWriteReleaseAnswersLost(t *testing.T) {
	for _, between := range []bool{true, false} {
		for n := 1; n <= 3; n++ {
			name := "alone"
			if between {
				name = "between"
			}
			t.Run(name+"-"+string(rune('0'+n)), func(t *testing.T) {
				f, ctx := setUp(t, 40*time.Second)
				px, sA := f.ProxiedSession(conn.WithLastHeardTimer())
				path := f.Path("dgcut")
				rwA := newRW(t, sA, path)
				wA, err := rwA.WriteLock().Acquire(ctx)
				require.NoError(t, err)
				var q *holder
				if between {
					q = hold(ctx, newRW(t, f.Session(), path).WriteLock())
					waitFor(t, 5*time.Second, "C queued", func() bool { return len(children(f.Raw(), path)) == 2 })
				}
				rA, err := rwA.ReadLock().Acquire(ctx)
				require.NoError(t, err)
				_ = rA.Lost()
				px.BlackholeAfterWrites(n)
				go func() {
					// shapes: give the release time to send its requests
					time.Sleep(300 * time.Millisecond)
					px.Heal()
					px.BlackholeAfterWrites(0)
				}()
				_, err = timed(ctx, 15*time.Second, rwA.WriteLock().Release)
				t.Logf("write release: %v; nodes %v; read lease %v; W lease %v", err, children(f.Raw(), path), rA.Err(), wA.Err())
				if err != nil && !errors.Is(err, lock.ErrReleasePending) {
					t.Errorf("write release: %v", err)
				}
				if rA.Err() != nil {
					t.Errorf("read lease lost by the write release: %v", rA.Err())
				}
				if q != nil {
					q.notGranted(t, 1500*time.Millisecond, "C entered while A reads")
				}
				// another reader of another session may come in only if no W is before it
				require.NoError(t, rwA.ReadLock().Release(ctx))
				if q != nil {
					q.wait(t, 5*time.Second, "C after A's read release")
					require.NoError(t, q.release())
				}
				if !eventually(10*time.Second, func() bool { return countNodes(f.Raw(), path) == 0 }) {
					t.Errorf("nodes left: %v", ephemeralsUnder(f.Raw(), path))
				}
				noWatchesLeft(t, f, sA, 5*time.Second, "A")
			})
		}
	}
}
