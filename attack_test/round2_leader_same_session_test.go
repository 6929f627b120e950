package attack_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe2_LeaderFollowerDeletedInSharedListing checks leader.Campaign's
// "Before it returns it reads our node once (the lease's Fence): a node
// deleted by someone else while we waited is not led from, and Campaign
// queues a new one and waits again", with this round's shared listings:
// L, P1 and P2 are participants of ONE session (their waiters share the
// listing), Q of another session queues last. A bystander deletes P1's
// node while it waits; L resigns. P2 leads; P1 must not run its function
// while P2's runs (in-process ledger), and must lead later, after Q (its new
// node is queued last), from a node that exists.
func TestProbe2_LeaderFollowerDeletedInSharedListing(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	path := c.Root() + "/r2-lss"
	bys := raw(t, c)
	s := session(t, c.Servers())
	sQ := session(t, c.Servers())
	eL, _ := leader.New(s, path, "L")
	e1, _ := leader.New(s, path, "P1")
	e2, _ := leader.New(s, path, "P2")
	eQ, _ := leader.New(sQ, path, "Q")
	if _, err := eL.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	var inside int32
	order := make(chan string, 4)
	run := func(e *leader.Election, id string, hold time.Duration) {
		go func() {
			_ = e.Run(ctx, func(fctx context.Context) error {
				if n := atomic.AddInt32(&inside, 1); n != 1 {
					t.Errorf("%s: %d leaders at once", id, n)
				}
				if ok, _, err := bys.Exists(leader.LeaseFrom(fctx).Path()); err != nil || !ok {
					t.Errorf("%s: leads from a node that does not exist", id)
				}
				order <- id
				select {
				case <-time.After(hold):
				case <-fctx.Done():
				}
				atomic.AddInt32(&inside, -1)
				return nil
			})
		}()
	}
	run(e1, "P1", 200*time.Millisecond)
	waitFor(t, 10*time.Second, "P1 queued", func() bool { return len(children(bys, path)) == 2 })
	ps, err := eL.Participants(ctx)
	if err != nil || len(ps) != 2 {
		t.Fatalf("participants: %v %v", ps, err)
	}
	p1node := ps[1].Node
	run(e2, "P2", 500*time.Millisecond)
	waitFor(t, 10*time.Second, "P2 queued", func() bool { return len(children(bys, path)) == 3 })
	run(eQ, "Q", 200*time.Millisecond)
	waitFor(t, 10*time.Second, "Q queued", func() bool { return len(children(bys, path)) == 4 })
	if err := bys.Delete(p1node, -1); err != nil {
		if err2 := bys.Delete(path+"/"+p1node, -1); err2 != nil {
			t.Fatalf("delete P1's node %s: %v / %v", p1node, err, err2)
		}
	}
	if err := eL.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 3 {
		select {
		case id := <-order:
			got = append(got, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("terms so far %v", got)
		}
	}
	t.Logf("terms in order: %v", got)
	if got[0] != "P2" || got[1] != "Q" || got[2] != "P1" {
		t.Errorf("want P2, Q, P1 (P1 requeued last), got %v", got)
	}
}
