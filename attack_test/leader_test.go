package attack_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_LeaderObserveConvergesUnderChurn checks Election.Observe (go doc
// ./leader Election.Observe): "A slow reader may therefore skip
// intermediate leaders, but never misses that the leader changed: after any
// change, the next value it receives is the leader as of that change or
// later", and "the zero Participant (Node "") when nobody campaigns any
// more", with leaders resigning in quick succession (on three sessions)
// while a bystander also deletes a leader's node, and the reader asleep.
func TestProbe_LeaderObserveConvergesUnderChurn(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 25*time.Second)
	zc := raw(t, c)
	path := c.Root() + "/observe-churn"
	so := session(t, c.Servers())
	obsE, _ := leader.New(so, path, "observer")
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	ch := obsE.Observe(octx)
	first := <-ch
	if first.Node != "" {
		t.Fatalf("first value %+v, want the zero Participant", first)
	}
	var es []*leader.Election
	for i := 0; i < 6; i++ {
		s := session(t, c.Servers())
		e, _ := leader.New(s, path, fmt.Sprint("p", i))
		es = append(es, e)
	}
	// p0 leads, p1..p5 queue (Campaign of a follower blocks: run them).
	leases := make([]chan *conn.Lease, len(es))
	for i, e := range es {
		leases[i] = make(chan *conn.Lease, 1)
		go func(i int, e *leader.Election) {
			l, err := e.Campaign(ctx)
			if err != nil {
				t.Errorf("campaign p%d: %v", i, err)
				close(leases[i])
				return
			}
			leases[i] <- l
		}(i, e)
		waitFor(t, 5*time.Second, "the participant to queue", func() bool {
			return len(children(zc, path)) == i+1
		})
	}
	// Churn: p0 resigns, p1's node is deleted by a bystander, p2 and p3
	// resign; p4 leads. The reader reads nothing meanwhile.
	for i := 0; i < 4; i++ {
		l := <-leases[i]
		if l == nil {
			t.FailNow()
		}
		if i == 1 {
			if err := zc.Delete(l.Path(), -1); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := es[i].Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l4 := <-leases[4]
	var last lock.Participant
	deadline := time.After(5 * time.Second)
	for last.Node != l4.Path() {
		select {
		case last = <-ch:
		case <-deadline:
			t.Fatalf("Observe's last value %+v, want p4 (%s) 5 s after it began to lead", last, l4.Path())
		}
	}
	if err := es[4].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	l5 := <-leases[5]
	if err := es[5].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	_ = l5
	deadline = time.After(5 * time.Second)
	for last.Node != "" {
		select {
		case last = <-ch:
		case <-deadline:
			t.Fatalf("Observe's last value %+v, want the zero Participant once nobody campaigns", last)
		}
	}
	ocancel()
	for range ch {
	}
	waitFor(t, 3*time.Second, "Observe's watch to go from the server", func() bool {
		return len(watchesUnder(c, 0, path)) == 0
	})
}

// TestProbe_LeaderRunRequeueAcrossExpiryAndForeignDelete checks leader's
// "A fencing token per term (Lease.Token, the node's czxid, growing with
// every leader)" and Run's "fn's ctx is cancelled the moment leadership is
// no longer safe: ... the session's epoch ended, ...; our node was deleted
// by someone else" with WithRequeue(true): three terms, the first ended by
// a server-side expiry (ExpireEpoch), the second by a bystander's delete;
// each term's ctx is cancelled with ErrLeadershipLost, and the tokens grow.
func TestProbe_LeaderRunRequeueAcrossExpiryAndForeignDelete(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	zc := raw(t, c)
	s := session(t, c.Servers())
	path := c.Root() + "/requeue"
	e, _ := leader.New(s, path, "me", leader.WithRequeue())
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	type term struct {
		token int64
		cause error
	}
	terms := make(chan term, 8)
	runErr := make(chan error, 1)
	go func() {
		runErr <- e.Run(rctx, func(fctx context.Context) error {
			l := leader.LeaseFrom(fctx)
			tok, err := fenceZxid(fctx, l)
			if err != nil {
				terms <- term{0, err}
				<-fctx.Done()
				return nil
			}
			terms <- term{tok, nil}
			<-fctx.Done()
			terms <- term{tok, context.Cause(fctx)}
			return nil
		})
	}()
	var tokens []int64
	next := func() term {
		select {
		case tm := <-terms:
			return tm
		case <-time.After(12 * time.Second):
			t.Fatalf("no term event within 12 s (terms so far: %v)", tokens)
		}
		return term{}
	}
	for i := 0; i < 3; i++ {
		tm := next()
		if tm.cause != nil {
			t.Fatalf("term %d: Token: %v", i, tm.cause)
		}
		tokens = append(tokens, tm.token)
		if i > 0 && tm.token <= tokens[i-1] {
			t.Fatalf("fencing tokens went backwards: %v", tokens)
		}
		switch i {
		case 0:
			ep, err := s.Epoch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := zktest.ExpireEpoch(ctx, c.Servers()[0], ep); err != nil {
				t.Fatal(err)
			}
		case 1:
			l := e.Leading()
			if l == nil {
				t.Fatal("Leading nil during a term")
			}
			if err := zc.Delete(l.Path(), -1); err != nil {
				t.Fatal(err)
			}
		case 2:
			rcancel()
		}
		end := next()
		if i < 2 && !errors.Is(end.cause, leader.ErrLeadershipLost) {
			t.Errorf("term %d ended with cause %v, want ErrLeadershipLost", i, end.cause)
		}
	}
	select {
	case err := <-runErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return 5 s after its ctx was cancelled")
	}
	waitFor(t, 5*time.Second, "no node left", func() bool { return countNodes(zc, path) == 0 })
	t.Logf("tokens: %v", tokens)
}

// TestProbe_LeaderRunRequeueSuspendedAsLost checks leader/doc.go: "Run
// cancels its function's ctx (cause: ErrLeadershipLost), when ... the
// session's suspension policy (conn.WithSuspendedAsLost) counts a suspended
// connection as lost", WithRequeue's "Run resigns (if it still leads) and
// queues a new node", and "A fencing token per term ... growing with every
// leader": three connection cuts (the session survives each), three terms
// ended with ErrLeadershipLost, a fourth ended by ctx; tokens strictly
// growing; no node left once Run returns and the connection is back.
func TestProbe_LeaderRunRequeueSuspendedAsLost(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	zc := raw(t, c)
	px := zktest.NewProxy(t, c.Servers())
	s := session(t, px.Addrs(), conn.WithSuspendedAsLost())
	path := c.Root() + "/requeue-suspended"
	e, _ := leader.New(s, path, "me", leader.WithRequeue())
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	type ev struct {
		token int64
		cause error
		start bool
	}
	evs := make(chan ev, 16)
	runErr := make(chan error, 1)
	go func() {
		runErr <- e.Run(rctx, func(fctx context.Context) error {
			tok, err := fenceZxid(fctx, leader.LeaseFrom(fctx))
			if err != nil {
				evs <- ev{cause: err, start: true}
				<-fctx.Done()
				evs <- ev{cause: context.Cause(fctx)}
				return nil
			}
			evs <- ev{token: tok, start: true}
			<-fctx.Done()
			evs <- ev{token: tok, cause: context.Cause(fctx)}
			return nil
		})
	}()
	next := func() ev {
		select {
		case x := <-evs:
			return x
		case <-time.After(10 * time.Second):
			t.Fatal("no term event within 10 s")
		}
		return ev{}
	}
	var tokens []int64
	for i := 0; i < 4; i++ {
		st := next()
		if !st.start {
			t.Fatalf("term %d: expected a start, got an end (%v)", i, st.cause)
		}
		if st.cause != nil {
			t.Logf("term %d: Token failed at start: %v", i, st.cause)
		} else {
			if n := len(tokens); n > 0 && st.token <= tokens[n-1] {
				t.Fatalf("tokens not growing: %v then %d", tokens, st.token)
			}
			tokens = append(tokens, st.token)
		}
		if i < 3 {
			px.Cut()
		} else {
			rcancel()
		}
		end := next()
		if i < 3 && !errors.Is(end.cause, leader.ErrLeadershipLost) {
			t.Errorf("term %d ended with %v, want ErrLeadershipLost", i, end.cause)
		}
	}
	select {
	case err := <-runErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run still running 5 s after its ctx was cancelled")
	}
	waitFor(t, 8*time.Second, "no node left", func() bool { return countNodes(zc, path) == 0 })
	t.Logf("tokens %v", tokens)
}

// fenceZxid is the lease's fencing token as one integer, its Fence's Zxid:
// a leader's terms are never passed in the process, so Pass is always 0.
func fenceZxid(ctx context.Context, l *conn.Lease) (int64, error) {
	f, err := l.Fence(ctx)
	return f.Zxid, err
}
