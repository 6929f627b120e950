package conn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// holding is one grant of a recipe that hands out leases: the leases it
// gave (one, or a multilock's members) and how to give them back.
type holding struct {
	leases  []*conn.Lease
	release func(context.Context) error
}

// recipeCase takes a grant of one recipe on path, in session s; recipe is
// what its holds and losses are reported under.
type recipeCase struct {
	name   string
	recipe string
	take   func(ctx context.Context, s *conn.Session, path string) (holding, error)
}

func one(l *conn.Lease, err error, release func(context.Context) error) (holding, error) {
	return holding{leases: []*conn.Lease{l}, release: release}, err
}

// leaseRecipes is every recipe that hands out leases.
var leaseRecipes = []recipeCase{
	{"mutex", "mutex", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		m, err := mutex.New(s, path)
		if err != nil {
			return holding{}, err
		}
		l, err := m.Acquire(ctx)
		return one(l, err, m.Release)
	}},
	{"mutex-local-handoff", "mutex", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		m, err := mutex.New(s, path, lock.WithLocalHandoff(10, 0))
		if err != nil {
			return holding{}, err
		}
		l, err := m.Acquire(ctx)
		return one(l, err, m.Release)
	}},
	{"rwlock-write", "rwlock", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		rw, err := rwlock.New(s, path)
		if err != nil {
			return holding{}, err
		}
		l, err := rw.WriteLock().Acquire(ctx)
		return one(l, err, rw.WriteLock().Release)
	}},
	{"rwlock-read", "rwlock", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		rw, err := rwlock.New(s, path)
		if err != nil {
			return holding{}, err
		}
		l, err := rw.ReadLock().Acquire(ctx)
		return one(l, err, rw.ReadLock().Release)
	}},
	{"semaphoremutex", "semaphore", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		m, err := semaphoremutex.New(s, path)
		if err != nil {
			return holding{}, err
		}
		l, err := m.Acquire(ctx)
		return one(l, err, m.Release)
	}},
	{"semaphore", "semaphore", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		sem, err := semaphoremutex.NewSemaphore(s, path, 2)
		if err != nil {
			return holding{}, err
		}
		l, err := sem.Acquire(ctx)
		return one(l, err, func(ctx context.Context) error { return sem.ReturnLease(ctx, l) })
	}},
	{"leader-campaign", "leader", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		e, err := leader.New(s, path, "p1")
		if err != nil {
			return holding{}, err
		}
		l, err := e.Campaign(ctx)
		return one(l, err, e.Resign)
	}},
	{"exclusive", "exclusive", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		x, err := exclusive.New(s, path)
		if err != nil {
			return holding{}, err
		}
		l, err := x.Acquire(ctx)
		return one(l, err, x.Release)
	}},
	{"multilock", "mutex", func(ctx context.Context, s *conn.Session, path string) (holding, error) {
		a, err := mutex.New(s, path+"-a")
		if err != nil {
			return holding{}, err
		}
		b, err := mutex.New(s, path+"-b")
		if err != nil {
			return holding{}, err
		}
		ml, err := multilock.New(a, b)
		if err != nil {
			return holding{}, err
		}
		ls, err := ml.Acquire(ctx)
		return holding{leases: ls, release: ml.Release}, err
	}},
}

// ends is the lock events of rec since its last Take, by what they say
// (event, recipe and cause), for comparing.
func ends(rec *testzk.Recorder) []string {
	var out []string
	for _, m := range rec.Take() {
		if m.Event == metrics.LockHold || m.Event == metrics.LockLost {
			out = append(out, fmt.Sprintf("%s %s %s", m.Event, m.Recipe, m.Cause))
		}
	}
	return out
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestUnwatchedLossCountedAtRelease: a holder that never looks at its
// lease (no Lost, Err, Fence or GuardedWrite), whose node a bystander
// deletes or whose session expires, then releases (nil or not): its lease
// is counted lost, with the cause, never as a hold; a plain release is a
// hold. Every recipe that hands out leases.
func TestUnwatchedLossCountedAtRelease(t *testing.T) {
	c := zktest.New(t)
	bystander, _, err := zk.Connect(c.Servers(), 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer bystander.Close()
	for _, rc := range leaseRecipes {
		t.Run(rc.name, func(t *testing.T) {
			for _, fault := range []string{"none", "bystander", "expiry"} {
				rec := &testzk.Recorder{}
				s := connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				h, err := rc.take(ctx, s, testzk.Path(t, c, fault))
				require.NoError(t, err, fault)
				rec.Take()
				want := repeat(fmt.Sprintf("hold %s ", rc.recipe), len(h.leases))
				switch fault {
				case "bystander":
					require.NoError(t, bystander.Delete(h.leases[0].Path(), -1))
					want[0] = fmt.Sprintf("lost %s %s", rc.recipe, metrics.CauseNodeDeleted)
				case "expiry":
					ep := h.leases[0].Epoch()
					require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
					<-ep.Done()
					want = repeat(fmt.Sprintf("lost %s %s", rc.recipe, metrics.CauseExpiry), len(h.leases))
				}
				_ = h.release(ctx) // a lost lease's release may fail: the metrics tell the loss
				assert.ElementsMatch(t, want, ends(rec), "fault %s", fault)
				s.Close()
			}
		})
	}
}

// TestCloseCountsHeldLeasesClosed: a session that holds many leases, each
// with Lost watched, is closed: every lease is counted lost with cause
// closed, and its Err says the session was closed, although the session's
// end deletes the nodes under the watches. Every recipe that hands out
// leases.
func TestCloseCountsHeldLeasesClosed(t *testing.T) {
	const n = 100
	c := zktest.New(t)
	for _, rc := range leaseRecipes {
		t.Run(rc.name, func(t *testing.T) {
			rec := &testzk.Recorder{}
			s := connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var leases []*conn.Lease
			for i := 0; i < n; i++ {
				h, err := rc.take(ctx, s, testzk.Path(t, c, "lock"))
				require.NoError(t, err)
				leases = append(leases, h.leases...)
			}
			// Wait until every watch is on the server: the session's close
			// then deletes nodes that are watched.
			for _, l := range leases {
				l.Lost()
			}
			waitUntil(t, 30*time.Second, "the leases' watches", func() bool {
				return rec.WatchGauge() >= len(leases)
			})
			rec.Take()
			require.NoError(t, s.Close())
			for _, l := range leases {
				<-l.Lost()
				if !errors.Is(l.Err(), conn.ErrClosed) {
					t.Errorf("lease %s: %v", l.Path(), l.Err())
				}
			}
			got := map[string]int{}
			for _, e := range ends(rec) {
				got[e]++
			}
			assert.Equal(t, map[string]int{fmt.Sprintf("lost %s %s", rc.recipe, metrics.CauseClosed): len(leases)}, got)
		})
	}
}
