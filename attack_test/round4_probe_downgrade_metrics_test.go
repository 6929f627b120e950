package attack_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe4_DowngradeMetrics checks conn's Metrics promises on rwlock's
// downgrade ("A goroutine that holds the write lock may take the read lock;
// it then holds both"): write, read, release write, release read must give
// two waits granted ("LockWait ... One per call"), two holds ("LockHold: a
// grant was released"), no loss, and no node left.
func TestProbe4_DowngradeMetrics(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 60*time.Second)
	zc := raw(t, c)
	t.Run("rwlock-downgrade", func(t *testing.T) {
		rec := &metricsRec{}
		s := session(t, c.Servers(), conn.WithMetrics(rec))
		rw, err := rwlock.New(s, c.Root()+"/r4-re/rw")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rw.WriteLock().Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := rw.ReadLock().Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.WriteLock().Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.ReadLock().Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := rec.count(conn.LockWait, "rwlock", conn.OutcomeGranted); got != 2 {
			t.Errorf("waits granted = %d, want 2: %s", got, rec.dump())
		}
		if got := rec.count(conn.LockHold, "rwlock", ""); got != 2 {
			t.Errorf("holds = %d, want 2: %s", got, rec.dump())
		}
		if got := rec.count(conn.LockLost, "", ""); got != 0 {
			t.Errorf("losses = %d, want 0 (a downgrade loses nothing): %s", got, rec.dump())
		}
		waitFor(t, 5*time.Second, "no node left", func() bool { return len(children(zc, c.Root()+"/r4-re/rw")) == 0 })
	})

}
