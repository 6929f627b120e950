package attack_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe3_SemaphoreMutexLossCountedOnce: one semaphoremutex.Mutex
// holder, one bystander delete of its node, one loss, counted once (with and
// without local handoff). Promises checked:
//   - conn.LockLost: "a held lease was found lost; Cause says why. It is
//     reported when the lease learns it ... once per lease" (and conn's
//     "Metrics": "LockLost: a lease lost ... reported when the lease learns
//     it ..., once");
//   - docs/operations.md: "A semaphoremutex's holds and losses are counted
//     under `semaphore` (its lease's) ... `semaphore-lock` is a semaphore's
//     internal lock (PATH/locks), held only while a lease is taken", and its
//     alert "Leases lost | increase(zkrecipes_lock_lost_total[5m]) > 0 |
//     Every loss is a holder that must stop mid-work".
//
// With one lease the internal lock node is the lease (semaphoremutex's "One
// lease: the internal mutex is the lease"); its deletion must be reported
// once, as recipe "semaphore".
func TestProbe3_SemaphoreMutexLossCountedOnce(t *testing.T) {
	for _, handoff := range []bool{false, true} {
		name := "plain"
		if handoff {
			name = "local-handoff"
		}
		t.Run(name, func(t *testing.T) {
			c := zktest.New(t)
			ctx := ctxT(t, 20*time.Second)
			rec := &metricsRec{}
			s := session(t, c.Servers(), conn.WithMetrics(rec))
			zc := raw(t, c)
			path := c.Root() + "/r3-semlost"
			var opts []semaphoremutex.Option
			if handoff {
				opts = append(opts, semaphoremutex.WithLocalHandoff(3, 0))
			}
			m, err := semaphoremutex.New(s, path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			l, err := m.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			lost := l.Lost()
			waitFor(t, 5*time.Second, "lease watched", func() bool { return rec.watches.Load() == 1 })
			if err := zc.Delete(s.FullPath(l.Path()), -1); err != nil {
				t.Fatalf("bystander delete of %s: %v", l.Path(), err)
			}
			select {
			case <-lost:
			case <-time.After(5 * time.Second):
				t.Fatal("Lost not closed after the bystander's delete")
			}
			if err := m.Release(ctx); err != nil {
				t.Logf("release after loss: %v", err)
			}
			// Give a second report time to come; none is allowed.
			eventually(time.Second, func() bool { return rec.count(conn.LockLost, "", "") > 1 })
			t.Logf("lock events: %s", rec.dump())
			if n := rec.count(conn.LockLost, "", ""); n != 1 {
				t.Errorf("one holder lost its lease once; LockLost reported %d times: %s", n, rec.dump())
			}
			if n := rec.count(conn.LockLost, "semaphore", conn.CauseNodeDeleted); n != 1 {
				t.Errorf("LockLost{recipe=semaphore, cause=node_deleted}: %d, want 1", n)
			}
		})
	}
}
