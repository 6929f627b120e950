package semaphoremutex_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// hold is one stretch of time a client held a lease.
type hold struct {
	who        int
	start, end time.Time
	node       string // the grant's lease node, where a test keeps it
}

// maxOverlap is the largest number of holds that overlap at one instant.
func maxOverlap(hs []hold) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var es []edge
	for _, h := range hs {
		es = append(es, edge{h.start, +1}, edge{h.end, -1})
	}
	// At equal times, ends before starts: a hold that ends as another
	// begins does not overlap it.
	sort.Slice(es, func(i, j int) bool {
		if es[i].at.Equal(es[j].at) {
			return es[i].delta < es[j].delta
		}
		return es[i].at.Before(es[j].at)
	})
	n, most := 0, 0
	for _, e := range es {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// TestSemaphoreNeverMoreThanLeases: 10 clients on their own sessions share
// 3 leases over several rounds. Never more than 3 inside (an in-process
// counter, and the history of holds), every client gets its turns, and
// nothing is left on the server.
func TestSemaphoreNeverMoreThanLeases(t *testing.T) {
	const clients, leases, rounds = 10, 3, 5
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	sessions := testzk.ConnectN(t, c.Servers(), clients+1)
	observer := sessions[clients]
	ctx := testzk.Ctx(t, time.Minute)

	var (
		inside, most atomic.Int32
		mu           sync.Mutex
		history      []hold
		errs         []error
		wg           sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	start := make(chan struct{}) // closed once every client's goroutine exists
	for i := 0; i < clients; i++ {
		sem := newSemaphore(t, sessions[i], path, leases)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for r := 0; r < rounds; r++ {
				l, err := sem.Acquire(ctx)
				if err != nil {
					fail(fmt.Errorf("client %d round %d: acquire: %w", i, r, err))
					return
				}
				begin := time.Now()
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n > leases {
					fail(fmt.Errorf("client %d round %d: %d holders at once", i, r, n))
				}
				time.Sleep(5 * time.Millisecond) // the work done under the lease
				inside.Add(-1)
				end := time.Now()
				mu.Lock()
				history = append(history, hold{who: i, start: begin, end: end})
				mu.Unlock()
				if err := sem.ReturnLease(ctx, l); err != nil {
					fail(fmt.Errorf("client %d round %d: release: %w", i, r, err))
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	assert.Len(t, history, clients*rounds, "every client acquired every round")
	assert.LessOrEqual(t, maxOverlap(history), leases, "never more holds at once than leases (history)")
	assert.LessOrEqual(t, most.Load(), int32(leases), "never more holders at once than leases (counter)")
	assert.Greater(t, most.Load(), int32(1), "the leases are shared, not taken one at a time")
	t.Logf("most holders at once: %d", most.Load())
	assert.Empty(t, ephemerals(t, observer, path), "nothing left on the server")
}

// TestSemaphoreExpiredLeasesComeBack: the leases of a session that the
// server expires go with it; waiters get them.
func TestSemaphoreExpiredLeasesComeBack(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	sessions := testzk.ConnectN(t, c.Servers(), 4)
	a, b, w1, w2 := sessions[0], sessions[1], sessions[2], sessions[3]
	ctx := testzk.Ctx(t, time.Minute)
	semA, semB := newSemaphore(t, a, path, 3), newSemaphore(t, b, path, 3)
	semW1, semW2 := newSemaphore(t, w1, path, 3), newSemaphore(t, w2, path, 3)

	var aLeases []*conn.Lease
	for i := 0; i < 2; i++ {
		l, err := semA.Acquire(ctx)
		require.NoError(t, err)
		aLeases = append(aLeases, l)
	}
	bl, err := semB.Acquire(ctx)
	require.NoError(t, err)
	holders, err := leaseHolders(ctx, semB)
	require.NoError(t, err)
	require.Len(t, holders, 3, "every lease taken")

	before := testzk.WatchesSet(w1)
	r1 := acquireAsync(ctx, semW1.Acquire)
	testzk.Watching(t, w1, before) // w1 holds the internal lock and watches the leases
	r2 := acquireAsync(ctx, semW2.Acquire)
	testzk.Eventually(t, 10*time.Second, func() bool { return len(testzk.Children(t, b, path+"/locks")) == 2 }, "w2 queued on the internal lock")

	ep := aLeases[0].Epoch()
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
	select {
	case <-ep.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the expired session's epoch has not ended within 20s")
	}
	for _, l := range aLeases {
		select {
		case <-l.Lost():
		case <-time.After(5 * time.Second):
			t.Fatal("a lease of the expired session is not Lost")
		}
		assert.ErrorIs(t, l.Err(), conn.ErrSessionExpired)
	}

	got1 := await(t, r1, 20*time.Second, "first waiter after the expiry")
	require.NoError(t, got1.err)
	got2 := await(t, r2, 20*time.Second, "second waiter after the expiry")
	require.NoError(t, got2.err)
	holders, err = leaseHolders(ctx, semB)
	require.NoError(t, err)
	var nodes []string
	for _, h := range holders {
		nodes = append(nodes, h.Node)
	}
	assert.ElementsMatch(t, []string{bl.Path(), got1.lease.Path(), got2.lease.Path()}, nodes)

	// The expired session's handle releases its lost leases without error
	// and works again in its next epoch.
	for _, l := range aLeases {
		assert.NoError(t, semA.ReturnLease(ctx, l))
	}
	require.NoError(t, semB.ReturnLease(ctx, bl))
	l, err := semA.Acquire(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, ep.SessionID(), l.Epoch().SessionID())
	for _, x := range []struct {
		s *semaphoremutex.Semaphore
		l *conn.Lease
	}{{semA, l}, {semW1, got1.lease}, {semW2, got2.lease}} {
		require.NoError(t, x.s.ReturnLease(ctx, x.l))
	}
	assert.Empty(t, ephemerals(t, b, path), "nothing left")
}

// TestSemaphoreRelease: only leases the handle granted and still holds can
// be released.
func TestSemaphoreRelease(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	s := testzk.Connect(t, c.Servers())
	ctx := testzk.Ctx(t, 30*time.Second)
	sem, other := newSemaphore(t, s, path, 2), newSemaphore(t, s, path, 2)

	assert.ErrorIs(t, sem.ReturnLease(ctx, nil), lock.ErrNotHeld, "nil lease")
	l, err := sem.Acquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, other.ReturnLease(ctx, l), lock.ErrNotHeld, "a lease of another handle")
	assert.NoError(t, l.Err(), "a refused release leaves the lease held")
	require.NoError(t, sem.ReturnLease(ctx, l))
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "a released lease is lost")
	err = sem.ReturnLease(ctx, l)
	assert.ErrorIs(t, err, lock.ErrNotHeld, "released twice")
	assert.Contains(t, err.Error(), "already released")
	assert.Empty(t, ephemerals(t, s, path))
}

// TestSemaphoreTryAcquire: TryAcquire takes a free lease and refuses,
// leaving nothing behind, when none is free.
func TestSemaphoreTryAcquire(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	sessions := testzk.ConnectN(t, c.Servers(), 2)
	ctx := testzk.Ctx(t, 30*time.Second)
	sem, other := newSemaphore(t, sessions[0], path, 2), newSemaphore(t, sessions[1], path, 2)

	l1, ok, err := sem.TryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	l2, ok, err := other.TryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	held := ephemerals(t, sessions[0], path)
	l3, ok, err := sem.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "both leases taken")
	assert.Nil(t, l3)
	assert.Equal(t, held, ephemerals(t, sessions[0], path), "a refused TryAcquire leaves nothing")

	require.NoError(t, other.ReturnLease(ctx, l2))
	l3, ok, err = sem.TryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, ok, "a lease was returned")
	require.NoError(t, sem.ReturnLease(ctx, l1))
	require.NoError(t, sem.ReturnLease(ctx, l3))
	assert.Empty(t, ephemerals(t, sessions[0], path))
}

// TestNewErrors: bad arguments are refused with clear errors.
func TestNewErrors(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "sem")

	_, err := semaphoremutex.NewSemaphore(nil, path, 1)
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "nil session")
	_, err = semaphoremutex.New(nil, path)
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "nil session")
	for _, n := range []int{0, -1} {
		_, err = semaphoremutex.NewSemaphore(s, path, n)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, "%d leases", n)
		assert.EqualError(t, err, fmt.Sprintf("semaphoremutex: new semaphore %s: %d leases, at least 1: conn: invalid argument", path, n))
	}
	for _, p := range []string{"", "relative", "/trailing/", "/a//b"} {
		_, err = semaphoremutex.New(s, p)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, "path %q", p)
		_, err = semaphoremutex.NewSemaphore(s, p, 2)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, "path %q", p)
	}
	_, err = semaphoremutex.New(s, "/zookeeper/x")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "path /zookeeper/x is reserved")
	_, err = semaphoremutex.New(s, path, nil)
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "nil option")

	// The count given is the count: four leases, not a fifth.
	sem := newSemaphore(t, s, path, 4)
	ctx := testzk.Ctx(t, 30*time.Second)
	for i := 0; i < 4; i++ {
		l, ok, err := sem.TryAcquire(ctx)
		require.NoError(t, err)
		require.True(t, ok, "lease %d of 4", i+1)
		defer func() { assert.NoError(t, sem.ReturnLease(ctx, l)) }()
	}
	_, ok, err := sem.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a fifth lease")
}

// TestAcquireAfterClose: a closed session refuses a semaphore's acquires
// with conn.ErrClosed (the mutex's: locktest.RunFaults).
func TestAcquireAfterClose(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	sem := newSemaphore(t, s, testzk.Path(t, c, "sem"), 2)
	require.NoError(t, s.Close())
	ctx := testzk.Ctx(t, 10*time.Second)
	_, err := sem.Acquire(ctx)
	assert.ErrorIs(t, err, conn.ErrClosed)
	_, ok, err := sem.TryAcquire(ctx)
	assert.ErrorIs(t, err, conn.ErrClosed)
	assert.False(t, ok)
}

// TestAbandonWhileWaitingForLease: a waiter that holds the internal lock
// and waits for a lease gives up on its deadline or on cancel; its internal
// lock node goes (it has no lease node while waiting), the next contender
// takes its place, and the holder is undisturbed. The holder is a foreign
// client's lease node (as Curator's InterProcessSemaphoreMutex makes it):
// the waiter's plain delete must not tell the next one-lease contender
// that the lease is free, so that one waits for the lease node as well.
func TestAbandonWhileWaitingForLease(t *testing.T) {
	for _, cancelIt := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel=%v", cancelIt), func(t *testing.T) {
			c := testzk.Shared(t)
			path := testzk.Path(t, c, "sem")
			sessions := testzk.ConnectN(t, c.Servers(), 3)
			hs, ws, ns := sessions[0], sessions[1], sessions[2]
			ctx := testzk.Ctx(t, time.Minute)
			waiter, next := newMutex(t, ws, path), newMutex(t, ns, path)
			held := foreignLease(t, hs, path)

			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			want := context.DeadlineExceeded
			if cancelIt {
				wctx, cancel = context.WithCancel(ctx)
				defer cancel()
				want = context.Canceled
			}
			before := testzk.WatchesSet(ws)
			r := acquireAsync(wctx, waiter.Acquire)
			testzk.Watching(t, ws, before) // holds the internal lock, watches the lease
			assert.Len(t, locktest.OwnedBy(ephemerals(t, hs, path), testzk.Epoch(t, ws).SessionID()), 1, "the waiter's lock node")

			// A second waiter queues on the internal lock behind it.
			before = testzk.WatchesSet(ns)
			rn := acquireAsync(ctx, next.Acquire)
			testzk.Watching(t, ns, before)
			if cancelIt {
				cancel()
			}
			got := await(t, r, 10*time.Second, "abandoned acquire")
			assert.ErrorIs(t, got.err, want)
			assert.Nil(t, got.lease)
			assert.Empty(t, locktest.OwnedBy(ephemerals(t, hs, path), testzk.Epoch(t, ws).SessionID()),
				"the waiter's nodes are gone when Acquire returns")
			assert.ErrorIs(t, waiter.Release(ctx), lock.ErrNotHeld)

			// The next contender took the internal lock over, listed the
			// leases and now watches the foreign lease node; it gets the
			// lease once that node goes.
			testzk.Watching(t, ns, before+1)
			select {
			case g := <-rn:
				t.Fatalf("next acquired while the foreign lease is held: %v", g.err)
			default:
			}
			assert.Len(t, testzk.Children(t, hs, path+"/locks"), 1, "next holds the internal lock")
			require.NoError(t, hs.Delete(ctx, held, -1))
			gn := await(t, rn, 10*time.Second, "next contender")
			require.NoError(t, gn.err)
			require.NoError(t, next.Release(ctx))
			assert.Empty(t, ephemerals(t, hs, path), "nothing left")
		})
	}
}

// foreignLease creates a lease node as a foreign client (Curator) holding
// the lease would, in session s, and returns its path.
func foreignLease(t testing.TB, s *conn.Session, path string) string {
	t.Helper()
	ctx := testzk.Ctx(t, 10*time.Second)
	ep := testzk.Epoch(t, s)
	p := path + "/leases/_c_" + uuid.NewString() + "-lease-"
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, p))
	created, err := s.Create(ctx, p, []byte("10.0.0.1"), zk.FlagEphemeral|zk.FlagSequence, connlink.Of(s).ACL())
	require.NoError(t, err)
	return created
}

// TestAbandonWhileQueuedOnInternalLock: a contender queued behind another
// on the internal lock gives up; its lock node goes at once.
func TestAbandonWhileQueuedOnInternalLock(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	sessions := testzk.ConnectN(t, c.Servers(), 3)
	ctx := testzk.Ctx(t, time.Minute)
	holder, first, second := newMutex(t, sessions[0], path), newMutex(t, sessions[1], path), newMutex(t, sessions[2], path)
	_, err := holder.Acquire(ctx)
	require.NoError(t, err)
	before := testzk.WatchesSet(sessions[1])
	r1 := acquireAsync(ctx, first.Acquire)
	testzk.Watching(t, sessions[1], before)
	before = testzk.WatchesSet(sessions[2])
	sctx, cancel := context.WithCancel(ctx)
	r2 := acquireAsync(sctx, second.Acquire)
	testzk.Watching(t, sessions[2], before)
	require.Len(t, testzk.Children(t, sessions[0], path+"/locks"), 3, "the holder's (its lease) and two waiters'")
	cancel()
	got := await(t, r2, 10*time.Second, "abandoned acquire")
	assert.ErrorIs(t, got.err, context.Canceled)
	assert.Len(t, testzk.Children(t, sessions[0], path+"/locks"), 2, "its lock node is gone")

	require.NoError(t, holder.Release(ctx))
	g1 := await(t, r1, 10*time.Second, "first waiter")
	require.NoError(t, g1.err)
	require.NoError(t, first.Release(ctx))
	assert.Empty(t, ephemerals(t, sessions[0], path))
}

// TestLeaseFencing: the lease is its node's, the internal lock node for a
// one-lease semaphore and the lease node otherwise: tokens grow with every
// holder, guarded writes commit only while it is held.
func TestLeaseFencing(t *testing.T) {
	for _, tc := range []struct {
		leases    int
		dir, kind string
	}{{1, "/locks/_c_", "-lock-"}, {2, "/leases/_c_", "-lease-"}} {
		t.Run(fmt.Sprintf("leases=%d", tc.leases), func(t *testing.T) {
			c := testzk.Shared(t)
			path := testzk.Path(t, c, "sem")
			s := testzk.Connect(t, c.Servers())
			ctx := testzk.Ctx(t, 30*time.Second)
			sem := newSemaphore(t, s, path, tc.leases)
			ep := testzk.Epoch(t, s)
			target := path + "-data"
			require.NoError(t, connlink.Of(ep).CreateParents(ctx, target))
			_, err := s.Create(ctx, target, nil, 0, connlink.Of(s).ACL())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Delete(context.Background(), target, -1) })

			var last conn.Fence
			for i := 0; i < 3; i++ {
				l, err := sem.Acquire(ctx)
				require.NoError(t, err)
				assert.Contains(t, l.Path(), path+tc.dir)
				assert.Contains(t, l.Path(), tc.kind)
				tok, err := l.Fence(ctx)
				require.NoError(t, err)
				assert.Positive(t, tok.Compare(last), "tokens grow: %v after %v", tok, last)
				last = tok
				_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: target, Data: []byte(fmt.Sprint(tok)), Version: -1})
				assert.NoError(t, err, "guarded write while held")
				require.NoError(t, sem.ReturnLease(ctx, l))
				_, err = l.GuardedWrite(ctx, &zk.SetDataRequest{Path: target, Data: []byte("stale"), Version: -1})
				assert.ErrorIs(t, err, conn.ErrLeaseLost, "guarded write after release")
			}
		})
	}
}

// TestParticipants: holders first, then the contenders queued on the
// internal lock in the order they will be served.
func TestParticipants(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "sem")
	sessions := testzk.ConnectN(t, c.Servers(), 4)
	ctx := testzk.Ctx(t, 30*time.Second)
	sems := make([]*semaphoremutex.Semaphore, 4)
	for i := range sems {
		sems[i] = newSemaphore(t, sessions[i], path, 2)
	}
	ps, err := sems[0].Participants(ctx)
	require.NoError(t, err)
	assert.Empty(t, ps, "nobody yet")

	l0, err := sems[0].Acquire(ctx)
	require.NoError(t, err)
	l1, err := sems[1].Acquire(ctx)
	require.NoError(t, err)
	var rs []<-chan result
	for i := 2; i < 4; i++ {
		before := testzk.WatchesSet(sessions[i])
		rs = append(rs, acquireAsync(ctx, sems[i].Acquire))
		testzk.Watching(t, sessions[i], before)
	}
	hs, err := leaseHolders(ctx, sems[0])
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Equal(t, []string{l0.Path(), l1.Path()}, []string{hs[0].Node, hs[1].Node})
	ps, err = sems[3].Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 4)
	for i, p := range ps {
		assert.Equal(t, i < 2, p.Holding, "participant %d", i)
		assert.True(t, p.Known)
		assert.NotEmpty(t, p.ID)
	}
	assert.Contains(t, ps[2].Node, path+"/locks/")
	assert.Less(t, ps[2].Seq, ps[3].Seq, "waiters in queue order")

	require.NoError(t, sems[0].ReturnLease(ctx, l0))
	require.NoError(t, sems[1].ReturnLease(ctx, l1))
	for i, r := range rs {
		g := await(t, r, 10*time.Second, "waiter")
		require.NoError(t, g.err)
		require.NoError(t, sems[i+2].ReturnLease(ctx, g.lease))
	}
	ps, err = sems[0].Participants(ctx)
	require.NoError(t, err)
	assert.Empty(t, ps)
}

// TestSemaphoreAnyReleaseAdmits: with every lease taken, the release of any
// holder, not only the oldest, lets the waiter in.
func TestSemaphoreAnyReleaseAdmits(t *testing.T) {
	const leases = 3
	for _, which := range []int{0, leases - 1} {
		t.Run(fmt.Sprintf("release=%d", which), func(t *testing.T) {
			c := testzk.Shared(t)
			path := testzk.Path(t, c, "sem")
			sessions := testzk.ConnectN(t, c.Servers(), leases+1)
			ctx := testzk.Ctx(t, 30*time.Second)
			sems := make([]*semaphoremutex.Semaphore, leases+1)
			held := make([]*conn.Lease, leases)
			for i := range sems {
				sems[i] = newSemaphore(t, sessions[i], path, leases)
			}
			for i := range held {
				l, err := sems[i].Acquire(ctx)
				require.NoError(t, err)
				held[i] = l
			}
			w := sessions[leases]
			before := testzk.WatchesSet(w)
			r := acquireAsync(ctx, sems[leases].Acquire)
			testzk.Eventually(t, 10*time.Second, func() bool { return testzk.WatchesSet(w) >= before+leases }, "the waiter watches every holder")
			select {
			case got := <-r:
				t.Fatalf("acquired while every lease is taken: %+v", got)
			case <-time.After(100 * time.Millisecond):
			}
			require.NoError(t, sems[which].ReturnLease(ctx, held[which]))
			got := await(t, r, 10*time.Second, "waiter after a release")
			require.NoError(t, got.err)
			hs, err := leaseHolders(ctx, sems[0])
			require.NoError(t, err)
			assert.Len(t, hs, leases)
			require.NoError(t, sems[leases].ReturnLease(ctx, got.lease))
			for i, l := range held {
				if i != which {
					require.NoError(t, sems[i].ReturnLease(ctx, l))
				}
			}
			assert.Empty(t, ephemerals(t, w, path))
		})
	}
}
