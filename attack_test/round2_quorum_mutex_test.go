package attack_test

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_QuorumTimerHandoffHolderFrozenServer checks mutex's "The holder
// can always learn that the lock is no longer safe: Lease.Lost closes when the
// session's epoch ends (expiry, or the local timer while cut off)" with conn's
// quorum timer ("the epoch ends ... connected to a follower, T/3 − tickTime/2
// before the leader can" expire the session) and WithLocalHandoff's "the
// node is handed on only while its epoch lives", on a three-server ensemble:
// A (only one follower's address, a handoff handle) holds with G1 while G2
// waits in the process; B (the other servers) queues. The follower is frozen
// (SIGSTOP). G1's Lost must close before B is granted; G1 then releases and
// G2 must not be handed the node; B's guarded write must commit and B's
// fence be above G1's.
func TestProbe2_QuorumTimerHandoffHolderFrozenServer(t *testing.T) {
	c := zktest.New(t, zktest.WithServers(3))
	ctx := ctxT(t, 29*time.Second)
	ld, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}
	f1, f2 := (ld+1)%3, (ld+2)%3
	srv := c.Servers()
	const T = 4 * time.Second
	sA := session(t, []string{srv[f1]}, conn.WithSessionTimeout(T))
	sB := session(t, []string{srv[ld], srv[f2]}, conn.WithSessionTimeout(T))
	path := c.Root() + "/r2-qmutex/lock"
	reg := c.Root() + "/r2-qmutex-reg"
	mA, _ := mutex.New(sA, path, mutex.WithLocalHandoff(5, 0))
	mB, _ := mutex.New(sB, path)
	ep, err := sB.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = ep.CreateParents(ctx, reg)
	if _, err := ep.Create(ctx, reg, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	g1 := hold(ctx, mA)
	l1 := g1.wait(t, 10*time.Second, "G1")
	f1Fence, err := l1.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost1 := l1.Lost()
	b := hold(ctx, mB)
	waitFor(t, 10*time.Second, "B queued", func() bool {
		ch, _, err := ep.Children(ctx, path)
		return err == nil && len(ch) == 2
	})
	g2 := hold(ctx, mA)
	waitFor(t, 10*time.Second, "G2 waiting in the process", func() bool { return watched(c, f1, l1.Path()) })
	var mu sync.Mutex
	var lostAt time.Time
	go func() {
		<-lost1
		mu.Lock()
		lostAt = time.Now()
		mu.Unlock()
	}()
	if err := c.Pause(f1); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	defer func() { _ = c.Resume(f1) }()
	lb := b.wait(t, 20*time.Second, "B")
	grantedB := time.Now()
	mu.Lock()
	la := lostAt
	mu.Unlock()
	if la.IsZero() || !la.Before(grantedB) {
		t.Fatalf("B granted %v after the freeze while G1's Lost was open (closed at %v)", grantedB.Sub(paused), la)
	}
	t.Logf("G1's Lost closed %v after the freeze, B granted %v after it", la.Sub(paused), grantedB.Sub(paused))
	rel := make(chan error, 1)
	go func() { rel <- g1.stop() }()
	select {
	case l2 := <-g2.granted:
		t.Fatalf("G2 handed %s while B holds", l2.Path())
	case <-time.After(time.Second):
	}
	if _, err := lb.GuardedWrite(ctx, &zk.SetDataRequest{Path: reg, Data: []byte("b"), Version: -1}); err != nil {
		t.Fatalf("B's guarded write: %v", err)
	}
	fb, err := lb.Fence(ctx)
	if err != nil || fb.Compare(f1Fence) <= 0 {
		t.Fatalf("B's fence %v (%v) not above G1's %v", fb, err, f1Fence)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	_ = c.Resume(f1)
	select {
	case err := <-rel:
		t.Logf("G1's release: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("G1's release hangs after the server resumed")
	}
}
