package attack_test

import (
	"context"
	"errors"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
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
	f := newFixture(t)
	ctx := ctxT(t, 28*time.Second)
	path := f.Path("r2-rw/lock")
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
		short, err := stressRounds(ctx, r, stop, 6*time.Second, acquire, func(l *conn.Lease) {
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
// acquire creates again). Round 1: B writes (h-W-0000000000), A's reader
// waits behind and so learns that h-W-0000000000 left. Round 2, in the new
// directory: B writes again, as h-W-0000000000; C's writer queues
// (h-W-0000000001); A's reader queues (h-R-0000000002) and waits on C's
// node. C gives up (a plain delete of a node of another session): A's
// reader must go on waiting for B's writer. If the session's view still
// takes h-W-0000000000 for gone, A reads while B writes.
func TestRWLockReaderAfterLockDirRecreated(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 40*time.Second)
	path := f.Path("r3-reuse/lock")
	zc := f.Raw()
	rwA, rwB, rwC := newRW(t, f.Session(), path), newRW(t, f.Session(), path), newRW(t, f.Session(), path)

	// Round 1.
	_, err := rwB.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	a1 := hold(ctx, rwA.ReadLock())
	waitFor(t, 10*time.Second, "A's reader queued", func() bool { return len(children(zc, path)) == 2 })
	round1 := children(zc, path)
	sort.Strings(round1)
	require.NoError(t, rwB.WriteLock().Release(ctx))
	a1.wait(t, 10*time.Second, "A round 1")
	require.NoError(t, a1.release())
	// The operator removes the empty lock directory (or the server's
	// container reaper does).
	waitFor(t, 10*time.Second, "empty directory", func() bool { return len(children(zc, path)) == 0 })
	if err := zc.Delete(path, -1); !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}

	// Round 2.
	lb, err := rwB.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	hc := hold(cctx, rwC.WriteLock())
	waitFor(t, 10*time.Second, "C's writer queued", func() bool { return len(children(zc, path)) == 2 })
	a2 := hold(ctx, rwA.ReadLock())
	waitFor(t, 10*time.Second, "A's reader queued", func() bool { return len(children(zc, path)) == 3 })
	round2 := children(zc, path)
	sort.Strings(round2)
	t.Logf("round 1 names %v, round 2 names %v", round1, round2)
	ccancel()
	recv(t, hc.failed, 5*time.Second, "C's cancelled acquire did not return")
	waitFor(t, 10*time.Second, "C's node deleted", func() bool { return len(children(zc, path)) == 2 })

	l, granted := a2.granted(t, 2*time.Second, "A round 2")
	if granted {
		t.Errorf("A's reader granted while B holds the write lock (B's Err %v, node exists: %v; A's Err %v)",
			lb.Err(), exists(zc, lb.Path()), l.Err())
	}
	require.NoError(t, rwB.WriteLock().Release(ctx))
	if !granted {
		a2.wait(t, 10*time.Second, "A round 2 after B")
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
	f := newFixture(t)
	ctx := ctxT(t, 40*time.Second)
	px := f.Path("r3-two/x")
	py := f.Path("r3-two/y")
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
