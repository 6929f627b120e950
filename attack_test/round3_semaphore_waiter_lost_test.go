package attack_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestFinding3_SemaphoreWaiterCountedAsLost: a semaphoremutex.Mutex
// contender waits while a foreign lease (a Curator-style lease node) is
// held; it waits holding the internal lock (semaphoremutex: "Otherwise it
// keeps the internal mutex and waits ... until one is deleted"). A
// bystander deletes that internal lock node. Nobody held a lease of ours,
// so nothing was lost: conn.LockLost is "a held lease was found lost", and
// docs/operations.md's alert says of zkrecipes_lock_lost_total "Every loss
// is a holder that must stop mid-work". The contender is then granted once
// the foreign lease goes and releases; LockLost must not have been reported.
func TestFinding3_SemaphoreWaiterCountedAsLost(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 30*time.Second)
	rec := &metricsRec{}
	s := session(t, c.Servers(), conn.WithMetrics(rec))
	zc := raw(t, c)
	path := c.Root() + "/r3-semwait"
	full := s.FullPath(path)
	for _, p := range []string{c.Root(), full, full + "/leases"} {
		_, _ = zc.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
	}
	foreign, err := zc.Create(full+"/leases/_c_3f1e2d4c-5b6a-4789-8abc-def012345678-lease-", []byte("curator"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := semaphoremutex.New(s, path)
	got := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctx)
		got <- err
	}()
	waitFor(t, 10*time.Second, "internal lock node", func() bool { return len(children(zc, full+"/locks")) == 1 })
	sid := epochOf(t, s).SessionID()
	waitFor(t, 10*time.Second, "contender watching the lease on the server", func() bool { return len(sessionWatches(t, c, 0, sid)) >= 1 })
	t.Logf("server watches of the session: %v; gauge %d", sessionWatches(t, c, 0, sid), rec.watches.Load())
	select {
	case err := <-got:
		t.Fatalf("acquire returned while a foreign lease is held: %v", err)
	default:
	}
	internal := children(zc, full+"/locks")[0]
	if err := zc.Delete(full+"/locks/"+internal, -1); err != nil {
		t.Fatal(err)
	}
	if err := zc.Delete(foreign, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("not granted after the foreign lease went")
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("lock events: %s", rec.dump())
	if n := rec.count(conn.LockLost, "", ""); n != 0 {
		t.Errorf("no held lease was lost, LockLost reported %d times: %s", n, rec.dump())
	}
}
