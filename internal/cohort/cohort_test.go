package cohort_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/cohort"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// One ZooKeeper for the package's tests (testzk.Shared); tests that hurt
// the network start their own proxy.
func TestMain(m *testing.M) { testzk.Main(m) }

// remote is a recipe's remote lock, as the recipes give it to their
// cohort: mutex's queue, or semaphoremutex's one-lease semaphore.
type remote struct {
	name string
	make func(t *testing.T, s *conn.Session, path string) cohort.Remote
}

var remotes = []remote{
	{"mutex", func(t *testing.T, s *conn.Session, path string) cohort.Remote {
		q, err := queue.New(s, path, queue.Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: queue.First}, queue.Options{})
		require.NoError(t, err)
		return cohort.Remote{Acquire: q.Acquire, TryAcquire: q.TryAcquire, Release: q.Release}
	}},
	{"semaphore", func(t *testing.T, s *conn.Session, path string) cohort.Remote {
		sem, err := semaphoremutex.NewSemaphore(s, path, 1)
		require.NoError(t, err)
		return cohort.Remote{Acquire: sem.Acquire, TryAcquire: sem.TryAcquire, Release: sem.ReturnLease}
	}},
}

// each runs f for every remote.
func each(t *testing.T, f func(t *testing.T, r remote)) {
	for _, r := range remotes {
		t.Run(r.name, func(t *testing.T) { f(t, r) })
	}
}

func newHandle(t *testing.T, r remote, s *conn.Session, path string) *cohort.Handle {
	t.Helper()
	h, err := cohort.New(s, cohort.Key{Kind: r.name, Path: path, Bound: cohort.Bound{MaxPasses: 10}}, r.make(t, s, path))
	require.NoError(t, err)
	return h
}

// grant is what an Acquire came to.
type grant struct {
	lease *conn.Lease
	err   error
}

// acquireAsync starts h.Acquire and waits until it waits in the process
// behind the holder.
func acquireAsync(ctx context.Context, t *testing.T, h *cohort.Handle) <-chan grant {
	t.Helper()
	ch := make(chan grant, 1)
	go func() {
		l, err := h.Acquire(ctx)
		ch <- grant{l, err}
	}()
	testzk.Eventually(t, 10*time.Second, func() bool { return h.Waiting() == 1 }, "the second goroutine does not wait in the process")
	return ch
}

// notGrantedWhile fails t if ch yields a grant within d (other says
// why that is wrong); it returns what ch yielded, if anything.
func notGrantedWhile(t *testing.T, ch <-chan grant, d time.Duration, other func() string) (grant, bool) {
	t.Helper()
	select {
	case g := <-ch:
		if g.err == nil {
			t.Errorf("local waiter granted %s (lease error %v) %s", g.lease.Path(), g.lease.Err(), other())
		}
		return g, true
	case <-time.After(d):
		return grant{}, false
	}
}

// On a healthy node the lock passes in the process: no request at the
// release (the waiter's coming set the node's watch, one getW), the same
// node, the next pass; a released grant is no holder any more.
func TestHandoffWhenHealthy(t *testing.T) {
	each(t, func(t *testing.T, r remote) {
		c := testzk.Shared(t)
		s := testzk.Connect(t, c.Servers())
		path := testzk.Path(t, c, "lock")
		ctx := testzk.Ctx(t, time.Minute)
		h := newHandle(t, r, s, path)

		watches := testzk.WatchesSet(s)
		a1, err := h.Acquire(ctx)
		require.NoError(t, err)
		f1, err := a1.Fence(ctx)
		require.NoError(t, err)
		a2 := acquireAsync(ctx, t, h)
		testzk.Watching(t, s, watches)
		reqs := testzk.Requests(s)
		require.NoError(t, h.Release(ctx, a1))
		g := <-a2
		require.NoError(t, g.err)
		assert.Equal(t, reqs, testzk.Requests(s), "a local handoff sent requests")
		assert.Equal(t, a1.Path(), g.lease.Path(), "not handed on in the process")
		f2, err := g.lease.Fence(ctx)
		require.NoError(t, err)
		assert.Equal(t, conn.Fence{Zxid: f1.Zxid, Pass: 1}, f2)
		assert.ErrorIs(t, h.Release(ctx, a1), lock.ErrNotHeld, "a released grant released again")
		require.NoError(t, h.Release(ctx, g.lease))
		assert.Empty(t, testzk.DataWatches(t, c, testzk.Epoch(t, s).SessionID()), "a watch outlives the node")
	})
}

// Someone deletes the holder's node (an operator breaking a stuck lock);
// a contender of another session is granted; the holder's release must
// not then hand the deleted node to the goroutine waiting in its process:
// it releases the node, and the waiter queues behind the other session.
func TestNoHandoffOfDeletedNode(t *testing.T) {
	each(t, func(t *testing.T, r remote) {
		c := testzk.Shared(t)
		ss := testzk.ConnectN(t, c.Servers(), 3)
		sa, sb, bystander := ss[0], ss[1], ss[2]
		path := testzk.Path(t, c, "lock")
		ctx := testzk.Ctx(t, time.Minute)
		h := newHandle(t, r, sa, path)
		rb := r.make(t, sb, path)

		a1, err := h.Acquire(ctx)
		require.NoError(t, err)
		a2 := acquireAsync(ctx, t, h)
		require.NoError(t, bystander.Delete(ctx, a1.Path(), -1))
		b, err := rb.Acquire(ctx)
		require.NoError(t, err, "the other session is not granted once the holder's node is gone")

		// The session is told of the deletion (a request behind it is
		// answered after the event); the grant then says so, within the
		// event's delivery: nobody called its Lost or Revoked.
		_, _, err = sa.Exists(ctx, a1.Path())
		require.NoError(t, err)
		for deadline := time.Now().Add(5 * time.Second); a1.Err() == nil && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		assert.ErrorIs(t, a1.Err(), conn.ErrLeaseLost, "the holder's grant does not report its deleted node")

		require.NoError(t, h.Release(ctx, a1), "releasing a deleted node")
		if _, got := notGrantedWhile(t, a2, time.Second, func() string {
			return "while " + b.Path() + " of another session holds (two holders)"
		}); got {
			return
		}
		fb, err := b.Fence(ctx)
		require.NoError(t, err)
		require.NoError(t, rb.Release(ctx, b))
		g := <-a2
		require.NoError(t, g.err)
		assert.NotEqual(t, a1.Path(), g.lease.Path(), "the deleted node was handed on")
		f2, err := g.lease.Fence(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, f2.Compare(fb), "%v after %v", f2, fb)
		require.NoError(t, h.Release(ctx, g.lease))
	})
}

// The epoch ends while a goroutine holds and another waits in the
// process: the holder's release, made the moment the epoch is seen ended
// (before the grant's own Lost has been closed), must not hand the dead
// node on: the waiter acquires anew, in the next epoch.
func TestNoHandoffAfterEpochEnd(t *testing.T) {
	each(t, func(t *testing.T, r remote) {
		c := testzk.Shared(t)
		s := testzk.Connect(t, c.Servers())
		path := testzk.Path(t, c, "lock")
		ctx := testzk.Ctx(t, 2*time.Minute)
		h := newHandle(t, r, s, path)
		for round := range 3 {
			a1, err := h.Acquire(ctx)
			require.NoError(t, err)
			a2 := acquireAsync(ctx, t, h)
			ep := a1.Epoch()
			require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
			for ep.Err() == nil { // release the moment the epoch ends
				require.NoError(t, ctx.Err())
			}
			require.NoError(t, h.Release(ctx, a1))
			g := <-a2
			require.NoError(t, g.err, "round %d", round)
			assert.NotEqual(t, ep.SessionID(), g.lease.Epoch().SessionID(), "round %d: a grant in the ended epoch", round)
			require.NoError(t, h.Release(ctx, g.lease))
		}
	})
}

// The connection is suspended (the network swallows everything) while a
// goroutine holds and another waits in the process: the holder's release
// must not grant the node to the waiter, which a remote acquire could not
// do either; the waiter is granted once the connection is back.
func TestNoHandoffWhileSuspended(t *testing.T) {
	each(t, func(t *testing.T, r remote) {
		c := testzk.Shared(t)
		p := zktest.NewProxy(t, c.Servers())
		// The last-heard timer: under a blackhole the connection is
		// suspended (at 2/3 of the timeout) long before the epoch ends;
		// the quorum timer (the default) would end the epoch first, at
		// half the timeout, and the session would never be Suspended.
		s := testzk.Connect(t, p.Addrs(), conn.WithSessionTimeout(12*time.Second), conn.WithLastHeardTimer())
		path := testzk.Path(t, c, "lock")
		ctx := testzk.Ctx(t, time.Minute)
		h := newHandle(t, r, s, path)

		a1, err := h.Acquire(ctx)
		require.NoError(t, err)
		a2 := acquireAsync(ctx, t, h)
		p.Blackhole()
		testzk.Eventually(t, 15*time.Second, func() bool { return s.State() == conn.Suspended }, "not suspended")
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err = h.Release(rctx, a1)
		cancel()
		if err != nil {
			assert.ErrorIs(t, err, lock.ErrReleasePending)
		}
		assert.ErrorIs(t, a1.Err(), conn.ErrLeaseLost, "the released grant")
		if _, got := notGrantedWhile(t, a2, 500*time.Millisecond, func() string { return "while suspended" }); got {
			p.Heal()
			return
		}
		p.Heal()
		g := <-a2
		require.NoError(t, g.err)
		assert.NoError(t, g.lease.Err())
		assert.Equal(t, a1.Epoch(), g.lease.Epoch(), "the session survived")
		require.NoError(t, h.Release(ctx, g.lease))
	})
}
