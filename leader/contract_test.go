package leader

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// locker drives an Election through the lock contract: Campaign is
// Acquire, Resign is Release, one attempt (campaign without waiting) is
// TryAcquire. Exclusion is then "at most one leader".
type locker struct{ e *Election }

func (l locker) Acquire(ctx context.Context) (*conn.Lease, error) { return l.e.Campaign(ctx) }
func (l locker) Release(ctx context.Context) error                { return l.e.Resign(ctx) }
func (l locker) Path() string                                     { return l.e.path() }
func (l locker) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	lease, err := l.e.campaign(ctx, false)
	return lease, lease != nil, err
}

func newLocker(t *testing.T, s *conn.Session, path string) locktest.Locker {
	t.Helper()
	e, err := New(s, path, t.Name())
	if err != nil {
		t.Fatalf("leader.New(%q): %v", path, err)
	}
	return locker{e}
}

func suiteOptions(t *testing.T) []locktest.Option {
	return []locktest.Option{
		locktest.WithCluster(testzk.Shared(t)),
	}
}

// The election passes the locks' contract: at most one leader, leadership
// in campaign order, cancellation and timeouts leave nothing behind, the
// leader's and a follower's expiry, server restarts.
func TestContract(t *testing.T) {
	locktest.Run(t, newLocker, append(suiteOptions(t), locktest.WithFIFO(true), locktest.WithoutLabel())...)
}

// The election survives the locks' faults (lost create answers, a lost
// resign answer, ...).
func TestFaults(t *testing.T) {
	locktest.RunFaults(t, newLocker, suiteOptions(t)...)
}
