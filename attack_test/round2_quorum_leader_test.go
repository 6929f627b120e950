package attack_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_QuorumTimerNoOverlapWhenLeadersServerFreezes checks leader.Run's
// "The session ending unseen (partition, a server cut off from its quorum,
// a frozen leader): with the session's quorum timer (the default ...), the
// epoch ends, and fn's ctx is cancelled, before the ensemble can expire the
// session and let another participant lead: at least T/3 − tickTime/2
// before", with a fault the project's own test does not use: the follower
// the leading participant is connected to is frozen (SIGSTOP), so its
// client's connection stays open and silent while the rest of the ensemble
// keeps its quorum and expires the session. The leading participant's
// session knows only that follower's address. The second participant's term
// must start after the first's fn ctx is done, by at least a margin.
func TestProbe2_QuorumTimerNoOverlapWhenLeadersServerFreezes(t *testing.T) {
	c := zktest.New(t, zktest.WithServers(3))
	ctx := ctxT(t, 29*time.Second)
	ld, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}
	f1, f2 := (ld+1)%3, (ld+2)%3
	srv := c.Servers()
	const T = 4 * time.Second
	s1 := session(t, []string{srv[f1]}, conn.WithSessionTimeout(T))
	s2 := session(t, []string{srv[ld], srv[f2]}, conn.WithSessionTimeout(T))
	path := c.Root() + "/r2-quorum/election"
	e1, _ := leader.New(s1, path, "one")
	e2, _ := leader.New(s2, path, "two")

	var mu sync.Mutex
	var end1, start2 time.Time
	leading := make(chan struct{})
	go func() {
		_ = e1.Run(ctx, func(fctx context.Context) error {
			close(leading)
			<-fctx.Done()
			mu.Lock()
			end1 = time.Now()
			mu.Unlock()
			return nil
		})
	}()
	select {
	case <-leading:
	case <-ctx.Done():
		t.Fatal("one never led")
	}
	started2 := make(chan struct{})
	go func() {
		_ = e2.Run(ctx, func(fctx context.Context) error {
			mu.Lock()
			start2 = time.Now()
			mu.Unlock()
			close(started2)
			<-fctx.Done()
			return nil
		})
	}()
	waitFor(t, 10*time.Second, "two queued", func() bool {
		ps, err := e2.Participants(ctx)
		return err == nil && len(ps) == 2
	})
	if err := c.Pause(f1); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	defer func() { _ = c.Resume(f1) }()
	select {
	case <-started2:
	case <-time.After(20 * time.Second):
		t.Fatal("two never led after one's server froze")
	}
	mu.Lock()
	defer mu.Unlock()
	if end1.IsZero() {
		t.Fatalf("two leads (%v after the freeze) while one's fn ctx is still live", start2.Sub(paused))
	}
	t.Logf("one's term ended %v after the freeze, two's began %v after it (margin %v)",
		end1.Sub(paused), start2.Sub(paused), start2.Sub(end1))
	if !end1.Before(start2) {
		t.Fatalf("overlap: two began %v before one's term ended", end1.Sub(start2))
	}
}
