package rwlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// A goroutine that downgraded (write lock, then read lock) and never
// looks at its leases, whose write node a bystander deletes, then
// releases both: both grants are counted lost (node_deleted: the read
// grant stood on the write node), none as a hold. Without the deletion,
// two holds.
func TestMetricsDowngradeUnwatchedLoss(t *testing.T) {
	c := testzk.Shared(t)
	ctx := testzk.Ctx(t, time.Minute)
	other := testzk.Connect(t, c.Servers())
	for _, deleted := range []bool{false, true} {
		rec := &testzk.Recorder{}
		s := testzk.Connect(t, c.Servers(), conn.WithMetrics(rec.Hooks()))
		rw := newRW(t, s, testzk.Path(t, c, "lock"))
		w, err := rw.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		_, err = rw.ReadLock().Acquire(ctx)
		require.NoError(t, err)
		rec.Take()
		want := metrics.Lock{Event: metrics.LockHold, Recipe: "rwlock", Path: rw.WriteLock().Path()}
		if deleted {
			require.NoError(t, other.Delete(ctx, w.Path(), -1))
			want = metrics.Lock{Event: metrics.LockLost, Recipe: "rwlock", Path: rw.WriteLock().Path(), Cause: metrics.CauseNodeDeleted}
		}
		require.NoError(t, rw.WriteLock().Release(ctx))
		require.NoError(t, rw.ReadLock().Release(ctx))
		assert.Equal(t, []metrics.Lock{want, want}, testzk.LockEvents(rec.Take()), "write node deleted: %v", deleted)
		s.Close()
	}
}
