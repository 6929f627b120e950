package multilock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const sessionTimeout = 8 * time.Second

func newExclusive(t *testing.T, s *conn.Session, path string) *exclusive.Lock {
	t.Helper()
	l, err := exclusive.New(s, path)
	require.NoError(t, err)
	return l
}

func newMutex(t *testing.T, s *conn.Session, path string) *mutex.InterProcessMutex {
	t.Helper()
	m, err := mutex.New(s, path)
	require.NoError(t, err)
	return m
}

// nodes returns the ephemeral nodes under path, failing t on an error.
func nodes(t *testing.T, s *conn.Session, path string) map[string]int64 {
	t.Helper()
	m, err := locktest.Ephemerals(locktest.Ctx(t, 10*time.Second), s, path)
	require.NoError(t, err)
	return m
}

func newMulti(t *testing.T, locks ...lock.Locker) *multilock.MultiLock {
	t.Helper()
	m, err := multilock.New(locks...)
	require.NoError(t, err)
	return m
}

// TestZooKeeper runs the multilock's properties against real ZooKeeper,
// with exclusive locks underneath.
func TestZooKeeper(t *testing.T) {
	c := zktest.New(t)

	// Workers on separate sessions take A then B, or B then A, as fast as
	// they can. Ordered by path, they can never deadlock; every round
	// finishes well within the overall timeout, and never two inside.
	t.Run("ABBANeverDeadlocks", func(t *testing.T) {
		const workers, rounds = 6, 15
		a, b := locktest.UniquePath(c, "A"), locktest.UniquePath(c, "B")
		sessions := locktest.ConnectN(t, c.Servers(), sessionTimeout, workers+1)
		ctx := locktest.Ctx(t, 60*time.Second)
		var (
			inside atomic.Int32
			mu     sync.Mutex
			errs   []error
			wg     sync.WaitGroup
		)
		fail := func(err error) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		}
		begin := time.Now()
		for w := range workers {
			first, second := a, b
			if w%2 == 1 {
				first, second = b, a
			}
			m := newMulti(t, newExclusive(t, sessions[w], first), newExclusive(t, sessions[w], second))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					if _, err := m.Acquire(ctx); err != nil {
						fail(fmt.Errorf("worker %d round %d: acquire: %w", w, r, err))
						return
					}
					if n := inside.Add(1); n > 1 {
						fail(fmt.Errorf("worker %d round %d: %d inside", w, r, n))
					}
					inside.Add(-1)
					if err := m.Release(ctx); err != nil {
						fail(fmt.Errorf("worker %d round %d: release: %w", w, r, err))
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			t.Error(err)
		}
		t.Logf("%d workers × %d rounds over A,B / B,A in %v", workers, rounds, time.Since(begin).Round(time.Millisecond))
		for _, p := range []string{a, b} {
			m, err := locktest.Ephemerals(locktest.Ctx(t, 10*time.Second), sessions[workers], p)
			require.NoError(t, err)
			assert.Empty(t, m, "nothing left under %s", p)
		}
	})

	// The second lock is held elsewhere: Acquire fails at the deadline, and
	// the first lock's node is gone from the server when it returns.
	t.Run("FailureOnSecondReleasesFirst", func(t *testing.T) {
		a, b := locktest.UniquePath(c, "A"), locktest.UniquePath(c, "B")
		sessions := locktest.ConnectN(t, c.Servers(), sessionTimeout, 2)
		other := newExclusive(t, sessions[1], b)
		_, err := other.Acquire(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err)

		m := newMulti(t, newExclusive(t, sessions[0], b), newExclusive(t, sessions[0], a))
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		leases, err := m.Acquire(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), b)
		assert.Nil(t, leases)
		assert.False(t, locktest.Exists(t, sessions[1], a+"/lock"), "the first lock's node is gone")
		assert.True(t, locktest.Exists(t, sessions[1], b+"/lock"), "the other holder keeps the second")

		require.NoError(t, other.Release(locktest.Ctx(t, 10*time.Second)))
		_, err = m.Acquire(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err, "all of it can be taken once free")
		require.NoError(t, m.Release(locktest.Ctx(t, 10*time.Second)))
	})

	// One sub-release fails for real (the lock was already released behind
	// the MultiLock's back): the others are released all the same and the
	// failure is reported. The lock is not held (lock.ErrNotHeld), so the
	// MultiLock is not left partly held: a retry could never succeed.
	t.Run("FailingSubReleaseDoesNotStopOthers", func(t *testing.T) {
		s := locktest.Connect(t, c.Servers(), sessionTimeout)
		p1, p2, p3 := locktest.UniquePath(c, "1"), locktest.UniquePath(c, "2"), locktest.UniquePath(c, "3")
		l1, l2, l3 := newExclusive(t, s, p1), newExclusive(t, s, p2), newExclusive(t, s, p3)
		m := newMulti(t, l3, l1, l2)
		leases, err := m.Acquire(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err)

		// Release the middle one (in path order: the leases' order) directly.
		var middle *exclusive.Lock
		for _, l := range []*exclusive.Lock{l1, l2, l3} {
			if l.Path()+"/lock" == leases[1].Path() {
				middle = l
			}
		}
		require.NotNil(t, middle)
		require.NoError(t, middle.Release(locktest.Ctx(t, 10*time.Second)))

		err = m.Release(locktest.Ctx(t, 10*time.Second))
		assert.ErrorIs(t, err, lock.ErrNotHeld)
		assert.ErrorIs(t, err, lock.ErrNotHeld)
		assert.NotErrorIs(t, err, multilock.ErrPartlyReleased, "a lock not held has nothing left to release")
		assert.Contains(t, err.Error(), middle.Path())
		for _, l := range leases {
			assert.False(t, locktest.Exists(t, s, l.Path()), "%s released", l.Path())
		}
		assert.ErrorIs(t, m.Release(locktest.Ctx(t, 10*time.Second)), lock.ErrNotHeld, "released, even if with errors")
		_, err = m.Acquire(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err, "not stuck: it can be taken again")
		require.NoError(t, m.Release(locktest.Ctx(t, 10*time.Second)))
	})

	// Three locks, the last held elsewhere: the whole Acquire ends at the
	// one deadline, and the first two are released.
	t.Run("OverallDeadline", func(t *testing.T) {
		sessions := locktest.ConnectN(t, c.Servers(), sessionTimeout, 2)
		p := locktest.UniquePath(c, "deadline")
		paths := []string{p + "-1", p + "-2", p + "-3"}
		other := newExclusive(t, sessions[1], paths[2])
		_, err := other.Acquire(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err)
		m := newMulti(t, newExclusive(t, sessions[0], paths[0]), newExclusive(t, sessions[0], paths[1]), newExclusive(t, sessions[0], paths[2]))

		const deadline = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		begin := time.Now()
		_, err = m.Acquire(ctx)
		took := time.Since(begin)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, deadline+time.Second, "one overall deadline")
		t.Logf("Acquire gave up after %v (deadline %v)", took, deadline)
		// The rollback's releases may finish in the background (they get
		// bg.Grace after the deadline): wait for them on the server.
		for _, p := range paths[:2] {
			locktest.WaitFor(t, 10*time.Second, p+" rolled back", func() bool {
				return !locktest.Exists(t, sessions[1], p+"/lock")
			})
		}
		require.NoError(t, other.Release(locktest.Ctx(t, 10*time.Second)))
	})

	// The server refuses to delete a mutex's node (an administrator took
	// the DELETE permission from its parent): the mutex stays held, and so
	// does the MultiLock, by the mutex only, until a later Release, with
	// the permission back, deletes it.
	t.Run("RefusedReleaseIsRetried", func(t *testing.T) {
		s := locktest.Connect(t, c.Servers(), sessionTimeout)
		pm, pe := locktest.UniquePath(c, "refused-m"), locktest.UniquePath(c, "refused-e")
		mu := newMutex(t, s, pm)
		m := newMulti(t, mu, newExclusive(t, s, pe))
		ctx := locktest.Ctx(t, 30*time.Second)
		_, err := m.Acquire(ctx)
		require.NoError(t, err)
		lost := m.Lost()

		locktest.SetACL(t, c.Servers(), pm, zk.WorldACL(zk.PermAll&^zk.PermDelete))
		err = m.Release(ctx)
		assert.ErrorIs(t, err, multilock.ErrPartlyReleased)
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		assert.Contains(t, err.Error(), "1 of 2 locks still held: "+pm)
		assert.True(t, mu.IsOwnedByCurrentGoroutine(), "the mutex is still held")
		assert.Len(t, nodes(t, s, pm), 1, "its node is still there")
		assert.False(t, locktest.Exists(t, s, pe+"/lock"), "the exclusive lock was released")
		locktest.WaitFor(t, 5*time.Second, "Lost closed", func() bool { return isClosed(lost) })
		_, err = m.Acquire(ctx)
		assert.ErrorIs(t, err, multilock.ErrBusy)

		locktest.SetACL(t, c.Servers(), pm, zk.WorldACL(zk.PermAll))
		require.NoError(t, m.Release(ctx), "the retry releases the mutex")
		assert.False(t, mu.IsOwnedByCurrentGoroutine())
		assert.Empty(t, nodes(t, s, pm), "its node is gone")
		assert.ErrorIs(t, m.Release(ctx), lock.ErrNotHeld)

		_, err = m.Acquire(ctx)
		require.NoError(t, err, "whole again")
		require.NoError(t, m.Release(ctx))
	})

	// A mutex released from a goroutine other than the one that took it
	// refuses (lock.ErrNotOwner) and stays held, and so does the
	// MultiLock; Release from the owner finishes the job.
	t.Run("NotOwnerIsRetriedByTheOwner", func(t *testing.T) {
		s := locktest.Connect(t, c.Servers(), sessionTimeout)
		pm, pe := locktest.UniquePath(c, "owner-m"), locktest.UniquePath(c, "owner-e")
		mu := newMutex(t, s, pm)
		m := newMulti(t, mu, newExclusive(t, s, pe))
		ctx := locktest.Ctx(t, 30*time.Second)
		_, err := m.Acquire(ctx)
		require.NoError(t, err)

		done := make(chan error, 1)
		go func() { done <- m.Release(ctx) }()
		err = <-done
		assert.ErrorIs(t, err, multilock.ErrPartlyReleased)
		assert.ErrorIs(t, err, lock.ErrNotOwner)
		assert.Contains(t, err.Error(), pm)
		assert.True(t, mu.IsOwnedByCurrentGoroutine(), "the mutex is still held by its owner")
		assert.Len(t, nodes(t, s, pm), 1, "its node is still there")
		assert.False(t, locktest.Exists(t, s, pe+"/lock"), "the exclusive lock was released")
		_, err = m.Acquire(ctx)
		assert.ErrorIs(t, err, multilock.ErrBusy)

		require.NoError(t, m.Release(ctx), "the owner releases what is left")
		assert.False(t, mu.IsOwnedByCurrentGoroutine())
		assert.Empty(t, nodes(t, s, pm), "its node is gone")
		assert.ErrorIs(t, m.Release(ctx), lock.ErrNotHeld)
	})

	// On a dead context no deletion can be confirmed: every lock reports a
	// pending release (lock.ErrReleasePending), which counts as released;
	// the nodes go in the background.
	t.Run("PendingCountsAsReleased", func(t *testing.T) {
		s := locktest.Connect(t, c.Servers(), sessionTimeout)
		pm, pe := locktest.UniquePath(c, "pending-m"), locktest.UniquePath(c, "pending-e")
		mu := newMutex(t, s, pm)
		m := newMulti(t, mu, newExclusive(t, s, pe))
		ctx := locktest.Ctx(t, 30*time.Second)
		_, err := m.Acquire(ctx)
		require.NoError(t, err)

		dead, cancel := context.WithCancel(ctx)
		cancel()
		err = m.Release(dead)
		assert.ErrorIs(t, err, lock.ErrReleasePending)
		assert.ErrorIs(t, err, lock.ErrReleasePending)
		assert.ErrorIs(t, err, lock.ErrReleasePending)
		assert.NotErrorIs(t, err, multilock.ErrPartlyReleased)
		assert.False(t, mu.IsOwnedByCurrentGoroutine())
		assert.ErrorIs(t, m.Release(ctx), lock.ErrNotHeld, "released")
		locktest.WaitFor(t, 10*time.Second, "the background deletes", func() bool {
			return len(nodes(t, s, pm)) == 0 && !locktest.Exists(t, s, pe+"/lock")
		})

		_, err = m.Acquire(ctx)
		require.NoError(t, err, "can be taken again")
		require.NoError(t, m.Release(ctx))
	})

	// Lost closes when one of the leases under the MultiLock is lost (here:
	// its node deleted by someone else), and its goroutine ends (goleak).
	t.Run("LostWhenOneLeaseIsLost", func(t *testing.T) {
		sessions := locktest.ConnectN(t, c.Servers(), sessionTimeout, 3)
		p := locktest.UniquePath(c, "lost")
		m := newMulti(t, newExclusive(t, sessions[0], p+"-a"), newExclusive(t, sessions[1], p+"-b"))
		ctx := locktest.Ctx(t, 30*time.Second)
		leases, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.Len(t, leases, 2)
		before := connlink.Of(sessions[1]).Stats().WatchesSet
		lost := m.Lost()
		assert.False(t, isClosed(lost))

		// Once the lease's node watch is in place (confirmed by the
		// server), an administrator deletes the second lock's node.
		locktest.WaitFor(t, 10*time.Second, "the lease's watch", func() bool {
			return connlink.Of(sessions[1]).Stats().WatchesSet > before
		})
		require.NoError(t, sessions[2].Delete(ctx, p+"-b/lock", -1))
		select {
		case <-lost:
		case <-ctx.Done():
			t.Fatal("Lost did not close when a lease was lost")
		}
		assert.ErrorIs(t, leases[1].Err(), conn.ErrLeaseLost)
		assert.False(t, isClosed(leases[0].Lost()), "the other lease is still held")
		assert.NoError(t, m.Release(ctx), "releasing an exclusive lock whose node is gone is not an error")
		assert.False(t, locktest.Exists(t, sessions[0], p+"-a/lock"))
		assert.True(t, isClosed(leases[0].Lost()), "released")
	})
}
