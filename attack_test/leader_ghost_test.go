package attack_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestLeaderNeverRunsForAFollowerWhoseNodeWasDeleted checks leader/doc.go:
// "At most one leader among all participants on the path (ours and Curator
// LeaderLatch's) whose sessions live", and Run's "fn's ctx is cancelled the
// moment leadership is no longer safe: ... our node was deleted by someone
// else". (package mutex documents the matching limitation for locks, "A lock
// node deleted by a third party while its owner is queued is noticed only
// once granted, through the lease"; package leader says nothing of it.)
//
// L leads; P1 and P2 queue behind it (P1 first). A bystander deletes P1's
// node while P1 waits. L resigns. P2 now leads (its node is first). P1 must
// not run its function as leader: a term whose node did not exist when it
// began (checked by a bystander read at the start of the function) is a
// second leader, however soon its ctx is cancelled afterwards (measured:
// about 140 ms of overlap with P2's term).
func TestLeaderNeverRunsForAFollowerWhoseNodeWasDeleted(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 20*time.Second)
	zc := raw(t, c)
	path := c.Root() + "/ghost-leader"
	sl := session(t, c.Servers())
	s1 := session(t, c.Servers())
	s2 := session(t, c.Servers())
	l, _ := leader.New(sl, path, "L")
	p1, _ := leader.New(s1, path, "P1")
	p2, _ := leader.New(s2, path, "P2")
	if _, err := l.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	type term struct {
		who        string
		start, end time.Time
		nodeExists bool
	}
	terms := make(chan term, 4)
	run := func(who string, e *leader.Election) {
		_ = e.Run(ctx, func(fctx context.Context) error {
			start := time.Now()
			ok, _, _ := zc.Exists(leader.LeaseFrom(fctx).Path())
			select {
			case <-fctx.Done():
			case <-time.After(3 * time.Second):
			}
			terms <- term{who, start, time.Now(), ok}
			return nil
		})
	}
	go run("P1", p1)
	waitFor(t, 5*time.Second, "P1 queued", func() bool { return len(children(zc, path)) == 2 })
	go run("P2", p2)
	waitFor(t, 5*time.Second, "P2 queued", func() bool { return len(children(zc, path)) == 3 })
	ps, err := l.Participants(ctx)
	if err != nil || len(ps) != 3 || ps[1].ID != "P1" {
		t.Fatalf("participants %+v %v", ps, err)
	}
	if err := zc.Delete(ps[1].Node, -1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let P2 move its watch to L's node (not observable)
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	var got []term
	deadline := time.After(8 * time.Second)
	for len(got) < 2 {
		select {
		case tm := <-terms:
			got = append(got, tm)
		case <-deadline:
			if len(got) == 0 {
				t.Fatal("no term ran")
			}
			got = append(got, term{})
		}
	}
	for _, tm := range got {
		if tm.who != "" && !tm.nodeExists {
			t.Errorf("%s ran a term (for %v) whose node was already gone when it began", tm.who, tm.end.Sub(tm.start).Round(time.Millisecond))
		}
	}
	a, b := got[0], got[1]
	if b.who != "" && a.start.Before(b.end) && b.start.Before(a.end) {
		t.Errorf("two leaders at once: %s for %v and %s for %v, overlapping", a.who, a.end.Sub(a.start).Round(time.Millisecond), b.who, b.end.Sub(b.start).Round(time.Millisecond))
	}
}
