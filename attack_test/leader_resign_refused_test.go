package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// leaderRunResignRefused runs one Election.Run whose function makes a
// bystander take DELETE off the election path, then returns nil, so that
// Run's resign is refused by the server. It returns Run's error, the node
// of the term and the handle.
func leaderRunResignRefused(t *testing.T, requeue bool) (string, *leader.Election, *zk.Conn, string, error) {
	c := zktest.New(t)
	s := session(t, c.Servers())
	zc := raw(t, c)
	path := c.Root() + "/run-resign-refused"
	var opts []leader.Option
	if requeue {
		opts = append(opts, leader.WithRequeue())
	}
	e, err := leader.New(s, path, "me", opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var node string
	runErr := e.Run(ctx, func(fctx context.Context) error {
		if node != "" {
			<-fctx.Done() // a second term: wait for the end
			return nil
		}
		node = leader.LeaseFrom(fctx).Path()
		if _, err := zc.SetACL(path, zk.WorldACL(zk.PermAll&^zk.PermDelete), -1); err != nil {
			t.Errorf("bystander setACL: %v", err)
		}
		return nil
	})
	return node, e, zc, path, runErr
}

// TestProbe_LeaderRunTellsRefusedResign checks leader.Run's doc (go doc
// ./leader Election.Run): "When fn returns, Run resigns ... Run returns: ...
// otherwise fn's error, joined with a resign error if there was one", and
// Resign's "Any other error (the server refused the delete) leaves us
// leading: call Resign again": a resign the server refuses must not be
// silent.
func TestProbe_LeaderRunTellsRefusedResign(t *testing.T) {
	node, e, zc, path, runErr := leaderRunResignRefused(t, false)
	ok, _, _ := zc.Exists(node)
	t.Logf("Run: %v; node %s exists: %v; Leading: %v", runErr, node, ok, e.Leading() != nil)
	if ok && runErr == nil {
		t.Fatalf("Run returned nil, but the term's node %s is still there: the caller was not told", node)
	}
	if _, err := zc.SetACL(path, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	if ok && e.Leading() != nil {
		if err := e.Resign(context.Background()); err != nil {
			t.Fatalf("Resign once the ACL is back: %v", err)
		}
	}
}

// TestLeaderRunRequeueReturnsOnRefusedResign checks the doc of
// WithRequeue (go doc ./leader WithRequeue): "Run then returns only when
// its ctx ends, when the function returns a non-nil error while leadership
// was still safe, or when the resign after a safe term fails: with
// Resign's error, the server's refusal (the handle then still leads: call
// Resign) or ErrReleasePending" (and Run's "With WithRequeue(true), ... or
// the error of the resign after a safe term when it failed"). The function
// returns nil, the server refuses the resign (a bystander took DELETE off
// the election path): Run returns the refusal before its ctx ends, the
// node stays, the handle still leads, and Resign works once the ACL is
// back.
func TestLeaderRunRequeueReturnsOnRefusedResign(t *testing.T) {
	start := time.Now()
	node, e, zc, path, runErr := leaderRunResignRefused(t, true)
	took := time.Since(start)
	ok, _, _ := zc.Exists(node)
	t.Logf("Run after %v: %v; node %s exists: %v; Leading: %v", took, runErr, node, ok, e.Leading() != nil)
	if _, err := zc.SetACL(path, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(runErr, zk.ErrNoAuth) || errors.Is(runErr, context.DeadlineExceeded) {
		t.Errorf("Run returned %v after %v; want the resign's refusal (zk.ErrNoAuth) before its ctx ended", runErr, took.Round(time.Millisecond))
	}
	if !ok || e.Leading() == nil {
		t.Fatalf("after a refused resign: node %s exists %v, Leading %v; want both", node, ok, e.Leading())
	}
	if err := e.Resign(context.Background()); err != nil {
		t.Fatalf("Resign once the ACL is back: %v", err)
	}
	if ok, _, _ := zc.Exists(node); ok {
		t.Fatalf("node %s still there after Resign", node)
	}
}
