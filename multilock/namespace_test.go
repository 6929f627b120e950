package multilock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// connectNS opens a session whose paths live under namespace ns.
func connectNS(t *testing.T, c *zktest.Cluster, ns string) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := conn.Connect(ctx, c.Servers(), conn.WithSessionTimeout(sessionTimeout), conn.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// barrier lets two parties wait, each up to a bound, for both to arrive.
type barrier struct {
	mu  sync.Mutex
	n   int
	all chan struct{} // closed when both arrived
}

func (b *barrier) arrive(d time.Duration) {
	b.mu.Lock()
	b.n++
	if b.n == 2 {
		close(b.all)
	}
	b.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-b.all:
	case <-t.C:
	}
}

// pausing is a Locker that, when it is the first lock its MultiLock
// takes (first is shared by the MultiLock's locks), waits at a barrier
// once it holds it: until the other MultiLock holds its own first lock too
// (or a bound passes). It embeds the lock itself, not a Locker, so that
// MultiLock identifies it as that lock.
type pausing struct {
	*exclusive.Lock
	first *atomic.Bool
	b     *barrier
}

func (p *pausing) Acquire(ctx context.Context) (*conn.Lease, error) {
	l, err := p.Lock.Acquire(ctx)
	if err == nil && p.first.CompareAndSwap(false, true) {
		p.b.arrive(time.Second)
	}
	return l, err
}

// pauseFirst wraps locks so that the first one taken pauses at b.
func pauseFirst(b *barrier, locks ...*exclusive.Lock) []lock.Locker {
	first := new(atomic.Bool)
	out := make([]lock.Locker, len(locks))
	for i, l := range locks {
		out[i] = &pausing{Lock: l, first: first, b: b}
	}
	return out
}

// TestNamespaces: locks are ordered and told apart by what identifies
// them on the servers (ensemble and full path), not by their path in a
// session with a namespace.
func TestNamespaces(t *testing.T) {
	c := zktest.New(t)
	base := locktest.UniquePath(c, "ns")

	// X is base/p/z and Y is base/q/a. The first MultiLock reaches them
	// through sessions with namespaces base/p and base/q (paths /z and /a),
	// the second through one with namespace base (/p/z and /q/a): by those
	// paths they would take them in opposite orders. Each pauses after its
	// first lock until the other has its first too (or 1 s passes): taken
	// in opposite orders, both get there, and each then waits for the
	// other's second lock until the deadline.
	t.Run("OppositeNamespacesNeverDeadlock", func(t *testing.T) {
		sp, sq, sb := connectNS(t, c, base+"/p"), connectNS(t, c, base+"/q"), connectNS(t, c, base)
		b := &barrier{all: make(chan struct{})}
		one := newMulti(t, pauseFirst(b, newExclusive(t, sp, "/z"), newExclusive(t, sq, "/a"))...)
		two := newMulti(t, pauseFirst(b, newExclusive(t, sb, "/p/z"), newExclusive(t, sb, "/q/a"))...)

		ctx := locktest.Ctx(t, 8*time.Second)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		taken := make([][]string, 2) // the leases' paths, in the order Acquire returns them
		for i, m := range []*multilock.MultiLock{one, two} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				leases, err := m.Acquire(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				for _, l := range leases {
					taken[i] = append(taken[i], l.Path())
				}
				errs[i] = m.Release(context.WithoutCancel(ctx))
			}()
		}
		wg.Wait()
		assert.NoError(t, errs[0], "first MultiLock")
		assert.NoError(t, errs[1], "second MultiLock")
		assert.Equal(t, []string{"/z/lock", "/a/lock"}, taken[0], "X (base/p/z) before Y (base/q/a)")
		assert.Equal(t, []string{"/p/z/lock", "/q/a/lock"}, taken[1])
		assert.Empty(t, nodes(t, sb, "/"), "nothing left")
	})

	// One lock (base/l) reached through two namespaces is one lock: New
	// refuses it, rather than a MultiLock that waits on itself.
	t.Run("SameLockThroughTwoNamespaces", func(t *testing.T) {
		s1, s2 := connectNS(t, c, base), connectNS(t, c, base+"/l")
		_, err := multilock.New(newExclusive(t, s1, "/l/m"), newMutex(t, s2, "/m"))
		require.ErrorIs(t, err, conn.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "two locks on the same path")
		assert.Contains(t, err.Error(), base+"/l/m", "names the lock by its full path")
		t.Log(err)

		// Different paths, same relative path: two locks.
		_, err = multilock.New(newExclusive(t, s1, "/m"), newExclusive(t, s2, "/m"))
		assert.NoError(t, err)
	})
}
