package exclusive_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const sessionTimeout = 8 * time.Second

func TestNewErrors(t *testing.T) {
	_, err := exclusive.New(nil, "/a")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.EqualError(t, err, "exclusive: new /a: nil session: conn: invalid argument")

	c := zktest.New(t)
	s := locktest.Connect(t, c.Servers(), sessionTimeout)
	for _, p := range []string{"", "a", "/a/", "/a//b", "/a/../b"} {
		_, err := exclusive.New(s, p)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, "path %q", p)
		assert.True(t, strings.HasPrefix(err.Error(), "exclusive: "), "%v", err)
	}
	_, err = exclusive.New(s, "/zookeeper/lock")
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	assert.ErrorContains(t, err, "path /zookeeper/lock is reserved")

	l, err := exclusive.New(s, "/a/b")
	require.NoError(t, err)
	assert.Equal(t, "/a/b", l.Path())
	assert.ErrorIs(t, l.Release(context.Background()), lock.ErrNotHeld)
}

// TestLock covers what is particular to the naive lock; the shared contract
// is in TestContract.
func TestLock(t *testing.T) {
	c := zktest.New(t)

	t.Run("NodeAndData", func(t *testing.T) {
		s := locktest.Connect(t, c.Servers(), sessionTimeout)
		path := locktest.UniquePath(c, "data")
		l, err := exclusive.New(s, path)
		require.NoError(t, err)
		ctx := locktest.Ctx(t, 10*time.Second)
		lease, err := l.Acquire(ctx)
		require.NoError(t, err)
		assert.Equal(t, path+"/lock", lease.Path())
		ep := lease.Epoch()
		data, st, err := connlink.Of(ep).Get(ctx, path+"/lock")
		require.NoError(t, err)
		assert.Equal(t, ep.SessionID(), st.EphemeralOwner, "an ephemeral node of our session")
		var d struct {
			ID   string `json:"id"`
			Host string `json:"host"`
			PID  int    `json:"pid"`
		}
		require.NoError(t, json.Unmarshal(data, &d), "the engine's node data: %s", data)
		host, _ := os.Hostname()
		assert.Equal(t, host, d.Host)
		assert.Equal(t, os.Getpid(), d.PID)
		assert.Regexp(t, `^[0-9a-f-]{36}$`, d.ID)
		tok, err := lease.Fence(ctx)
		require.NoError(t, err)
		assert.Equal(t, conn.Fence{Zxid: st.Czxid}, tok, "the fencing token is the node's czxid, pass 0")
		_, _, err = connlink.Of(ep).Get(ctx, path)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		ok, _, err := connlink.Of(ep).Exists(ctx, path+"/lock")
		require.NoError(t, err)
		assert.False(t, ok, "released")
	})

	t.Run("NotReentrant", func(t *testing.T) {
		s := locktest.Connect(t, c.Servers(), sessionTimeout)
		l, err := exclusive.New(s, locktest.UniquePath(c, "reentry"))
		require.NoError(t, err)
		_, err = l.Acquire(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err)

		short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err = l.Acquire(short)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "a second Acquire on a held handle waits")
		_, ok, err := l.TryAcquire(locktest.Ctx(t, 10*time.Second))
		assert.NoError(t, err)
		assert.False(t, ok, "TryAcquire on a held handle")

		// It waits for the Release, from any goroutine.
		before := connlink.Of(s).Stats().WatchesSet
		second := make(chan error, 1)
		go func() {
			_, err := l.Acquire(locktest.Ctx(t, 20*time.Second))
			second <- err
		}()
		locktest.WaitFor(t, 10*time.Second, "the second Acquire to watch", func() bool {
			return connlink.Of(s).Stats().WatchesSet > before
		})
		require.NoError(t, l.Release(locktest.Ctx(t, 10*time.Second)))
		select {
		case err := <-second:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the second Acquire did not get the lock after the Release")
		}
		require.NoError(t, l.Release(locktest.Ctx(t, 10*time.Second)))
	})

	// The create's answer is lost: conn retries it, gets NodeExists for our
	// own node, and Acquire must see that the node is its own rather than
	// wait on itself.
	t.Run("LostCreateAnswer", func(t *testing.T) {
		p := zktest.NewProxy(t, c.Servers())
		s := locktest.Connect(t, p.Addrs(), sessionTimeout)
		path := locktest.UniquePath(c, "lost-answer")
		l, err := exclusive.New(s, path)
		require.NoError(t, err)
		// Create the parents first, so that the lost answer is the lock
		// node's.
		ep, err := connlink.Of(s).Epoch(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err)
		require.NoError(t, connlink.Of(ep).CreateParents(locktest.Ctx(t, 10*time.Second), path+"/lock"))

		p.CutAfterNextWrite()
		lease, err := l.Acquire(locktest.Ctx(t, 20*time.Second))
		require.NoError(t, err, "Acquire recognises its own node after a lost answer")
		assert.Same(t, ep, lease.Epoch(), "the session survived the cut")
		require.NoError(t, l.Release(locktest.Ctx(t, 10*time.Second)))
		assert.False(t, locktest.Exists(t, s, path+"/lock"))
	})

	// ctx ends while the create is in flight: Acquire returns at once with
	// ctx's error, and the node the create made is deleted when its answer
	// comes.
	t.Run("CancelWithCreateInFlight", func(t *testing.T) {
		p := zktest.NewProxy(t, c.Servers())
		s := locktest.Connect(t, p.Addrs(), sessionTimeout)
		observer := locktest.Connect(t, c.Servers(), sessionTimeout)
		path := locktest.UniquePath(c, "inflight")
		l, err := exclusive.New(s, path)
		require.NoError(t, err)
		ep, err := connlink.Of(s).Epoch(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err)
		require.NoError(t, connlink.Of(ep).CreateParents(locktest.Ctx(t, 10*time.Second), path+"/lock"))

		p.SetLatency(300 * time.Millisecond) // the create reaches the server after ctx ended
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		begin := time.Now()
		_, err = l.Acquire(ctx)
		took := time.Since(begin)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, 1500*time.Millisecond, "returns soon after ctx ended")
		t.Logf("Acquire returned after %v", took)
		p.SetLatency(0)
		locktest.WaitFor(t, 10*time.Second, "the node made by the abandoned create to be deleted", func() bool {
			return !locktest.Exists(t, observer, path+"/lock")
		})
		// And the lock works.
		_, err = l.Acquire(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err)
		require.NoError(t, l.Release(locktest.Ctx(t, 10*time.Second)))
	})

	// The delete's fate is unknown (the network swallows it): Release says
	// so and deletes in the background once the network is back.
	t.Run("ReleaseUnconfirmed", func(t *testing.T) {
		p := zktest.NewProxy(t, c.Servers())
		s := locktest.Connect(t, p.Addrs(), sessionTimeout)
		observer := locktest.Connect(t, c.Servers(), sessionTimeout)
		path := locktest.UniquePath(c, "unconfirmed")
		l, err := exclusive.New(s, path)
		require.NoError(t, err)
		lease, err := l.Acquire(locktest.Ctx(t, 10*time.Second))
		require.NoError(t, err)

		p.Blackhole()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err = l.Release(ctx)
		assert.ErrorIs(t, err, lock.ErrReleasePending)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, isClosed(lease.Lost()), "the lease is released all the same")
		assert.ErrorIs(t, l.Release(locktest.Ctx(t, time.Second)), lock.ErrNotHeld, "the handle holds nothing")
		assert.True(t, locktest.Exists(t, observer, path+"/lock"), "the node is still there while the network is down")

		p.Heal()
		locktest.WaitFor(t, 15*time.Second, "the background delete", func() bool {
			return !locktest.Exists(t, observer, path+"/lock")
		})
		assert.NoError(t, lease.Epoch().Err(), "the session survived")
	})

	// The epoch ends while held: the lease is lost and Release returns nil
	// (the node went with the session).
	t.Run("ReleaseAfterExpiry", func(t *testing.T) {
		s := locktest.Connect(t, c.Servers(), sessionTimeout)
		l, err := exclusive.New(s, locktest.UniquePath(c, "expired"))
		require.NoError(t, err)
		ctx := locktest.Ctx(t, 30*time.Second)
		lease, err := l.Acquire(ctx)
		require.NoError(t, err)
		ep := lease.Epoch()
		lost := lease.Lost() // armed across the expiry
		require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
		select {
		case <-ep.Done():
		case <-ctx.Done():
			t.Fatal("epoch not ended after expiry")
		}
		select {
		case <-lost:
		case <-ctx.Done():
			t.Fatal("lease not lost after expiry")
		}
		assert.ErrorIs(t, lease.Err(), conn.ErrSessionExpired)
		assert.NoError(t, l.Release(ctx))
	})
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
