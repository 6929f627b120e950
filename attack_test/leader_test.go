package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
)

// TestLeaderObserveConvergesUnderChurn checks Election.Observe (go doc
// ./leader Election.Observe): "A slow reader may therefore skip
// intermediate leaders, but never misses that the leader changed: after any
// change, the next value it receives is the leader as of that change or
// later", and "the zero Participant (Node "") when nobody campaigns any
// more", with leaders resigning in quick succession (on three sessions)
// while a bystander also deletes a leader's node, and the reader asleep.
func TestLeaderObserveConvergesUnderChurn(t *testing.T) {
	f, ctx := setUp(t, 25*time.Second)
	zc := f.Raw()
	path := f.Path("observe-churn")
	obsE, _ := leader.New(f.Session(), path, "observer")
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	ch := obsE.Observe(octx)
	if first := <-ch; first.Node != "" {
		t.Fatalf("first value %+v, want the zero Participant", first)
	}
	var es []*leader.Election
	for i := 0; i < 6; i++ {
		e, _ := leader.New(f.Session(), path, fmt.Sprint("p", i))
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
			require.NoError(t, zc.Delete(l.Path(), -1))
			continue
		}
		require.NoError(t, es[i].Resign(ctx))
	}
	l4 := <-leases[4]
	observeUntil(t, ch, 5*time.Second, l4.Path(), "Observe's last value, want p4 (%s) 5 s after it began to lead", l4.Path())
	require.NoError(t, es[4].Resign(ctx))
	<-leases[5]
	require.NoError(t, es[5].Resign(ctx))
	observeUntil(t, ch, 5*time.Second, "", "Observe's last value, want the zero Participant once nobody campaigns")
	ocancel()
	for range ch {
	}
	waitFor(t, 3*time.Second, "Observe's watch to go from the server", func() bool {
		return len(watchesUnder(f, 0, path)) == 0
	})
}

// observeUntil reads Observe's channel ch until the leader's node is node
// ("" for nobody), for up to d; it fails the test with the message and the
// last value read otherwise.
func observeUntil(t *testing.T, ch <-chan lock.Participant, d time.Duration, node string, format string, args ...any) {
	t.Helper()
	deadline := time.After(d)
	var last lock.Participant
	for first := true; first || last.Node != node; first = false {
		select {
		case last = <-ch:
		case <-deadline:
			t.Fatalf(format+" (last value %+v)", append(args, last)...)
		}
	}
}

// termEvent is the start of a term of Election.Run (start, with its
// fencing token or the error reading it) or its end (with its ctx's cause).
type termEvent struct {
	token int64
	node  string // the term's lease's node
	cause error
	start bool
}

// runTerms is the Run of a participant ("me", WithRequeue) on its own
// goroutine, whose function reports each term's start and end, and waits
// for its ctx to end; stop cancels Run's ctx.
type runTerms struct {
	e    *leader.Election
	stop context.CancelFunc
	evs  chan termEvent
	err  chan error // Run's error
}

func runRequeue(t *testing.T, ctx context.Context, s *conn.Session, path string) *runTerms {
	t.Helper()
	e, err := leader.New(s, path, "me", leader.WithRequeue())
	require.NoError(t, err)
	ctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	r := &runTerms{e: e, stop: stop, evs: make(chan termEvent, 16), err: make(chan error, 1)}
	go func() {
		r.err <- e.Run(ctx, func(fctx context.Context, lease *conn.Lease) error {
			tok, err := fenceZxid(fctx, lease)
			r.evs <- termEvent{token: tok, node: lease.Path(), cause: err, start: true}
			<-fctx.Done()
			r.evs <- termEvent{token: tok, node: lease.Path(), cause: context.Cause(fctx)}
			return nil
		})
	}()
	return r
}

// next returns the next term event, which must come within d.
func (r *runTerms) next(t *testing.T, d time.Duration) termEvent {
	t.Helper()
	return recv(t, r.evs, d, "no term event within %v", d)
}

// ends reads term i's end, which must come within d and, when lost, be
// caused by ErrLeadershipLost.
func (r *runTerms) ends(t *testing.T, d time.Duration, i int, lost bool) {
	t.Helper()
	if end := r.next(t, d); lost && !errors.Is(end.cause, leader.ErrLeadershipLost) {
		t.Errorf("term %d ended with cause %v, want ErrLeadershipLost", i, end.cause)
	}
}

// canceled fails the test unless Run returns within 5 s, with an error
// matching context.Canceled, and no node is left on path within d.
func (r *runTerms) canceled(t *testing.T, f *fixture, path string, d time.Duration) {
	t.Helper()
	if err := recv(t, r.err, 5*time.Second, "Run did not return 5 s after its ctx was cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want context.Canceled", err)
	}
	waitFor(t, d, "no node left", func() bool { return countNodes(f.Raw(), path) == 0 })
}

// TestLeaderRunRequeueAcrossExpiryAndForeignDelete checks leader's
// "A fencing token per term (Lease.Token, the node's czxid, growing with
// every leader)" and Run's "fn's ctx is cancelled the moment leadership is
// no longer safe: ... the session's epoch ended, ...; our node was deleted
// by someone else" with WithRequeue(true): three terms, the first ended by
// a server-side expiry (ExpireEpoch), the second by a bystander's delete;
// each term's ctx is cancelled with ErrLeadershipLost, and the tokens grow.
func TestLeaderRunRequeueAcrossExpiryAndForeignDelete(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	s := f.Session()
	path := f.Path("requeue")
	run := runRequeue(t, ctx, s, path)
	var tokens []int64
	for i := 0; i < 3; i++ {
		tm := run.next(t, 12*time.Second)
		if tm.cause != nil {
			t.Fatalf("term %d: Token: %v", i, tm.cause)
		}
		tokens = append(tokens, tm.token)
		if i > 0 && tm.token <= tokens[i-1] {
			t.Fatalf("fencing tokens went backwards: %v", tokens)
		}
		switch i {
		case 0:
			f.Expire(ctx, epochOf(t, s))
		case 1:
			require.NoError(t, f.Raw().Delete(tm.node, -1))
		case 2:
			run.stop()
		}
		run.ends(t, 12*time.Second, i, i < 2)
	}
	run.canceled(t, f, path, 5*time.Second)
	t.Logf("tokens: %v", tokens)
}

// TestLeaderRunRequeueSuspendedAsLost checks leader/doc.go: "Run
// cancels its function's ctx (cause: ErrLeadershipLost), when ... the
// session's suspension policy (conn.WithSuspendedAsLost) counts a suspended
// connection as lost", WithRequeue's "Run resigns (if it still leads) and
// queues a new node", and "A fencing token per term ... growing with every
// leader": three connection cuts (the session survives each), three terms
// ended with ErrLeadershipLost, a fourth ended by ctx; tokens strictly
// growing; no node left once Run returns and the connection is back.
func TestLeaderRunRequeueSuspendedAsLost(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	px, s := f.ProxiedSession(conn.WithSuspendedAsLost())
	path := f.Path("requeue-suspended")
	run := runRequeue(t, ctx, s, path)
	var tokens []int64
	for i := 0; i < 4; i++ {
		st := run.next(t, 10*time.Second)
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
			run.stop()
		}
		run.ends(t, 10*time.Second, i, i < 3)
	}
	run.canceled(t, f, path, 8*time.Second)
	t.Logf("tokens %v", tokens)
}

// fenceZxid is the lease's fencing token as one integer, its Fence's Zxid:
// a leader's terms are never passed in the process, so Pass is always 0.
func fenceZxid(ctx context.Context, l *conn.Lease) (int64, error) {
	f, err := l.Fence(ctx)
	return f.Zxid, err
}

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
	f, ctx := setUp(t, 20*time.Second)
	zc := f.Raw()
	path := f.Path("ghost-leader")
	sl := f.Session()
	s1 := f.Session()
	s2 := f.Session()
	l, _ := leader.New(sl, path, "L")
	p1, _ := leader.New(s1, path, "P1")
	p2, _ := leader.New(s2, path, "P2")
	_, err := l.Campaign(ctx)
	require.NoError(t, err)
	type term struct {
		who        string
		start, end time.Time
		nodeExists bool
	}
	terms := make(chan term, 4)
	run := func(who string, e *leader.Election) {
		_ = e.Run(ctx, func(fctx context.Context, lease *conn.Lease) error {
			start := time.Now()
			ok, _, _ := zc.Exists(lease.Path())
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
	require.NoError(t, zc.Delete(ps[1].Node, -1))
	time.Sleep(200 * time.Millisecond) // let P2 move its watch to L's node (not observable)
	require.NoError(t, l.Resign(ctx))
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

// leaderRunResignRefused runs one Election.Run whose function makes a
// bystander take DELETE off the election path, then returns nil, so that
// Run's resign is refused by the server. It returns Run's error, the lease
// of the term and the handle.
func leaderRunResignRefused(t *testing.T, requeue bool) (*conn.Lease, *leader.Election, *zk.Conn, string, error) {
	f := newFixture(t)
	s := f.Session()
	zc := f.Raw()
	path := f.Path("run-resign-refused")
	var opts []lock.Option
	if requeue {
		opts = append(opts, leader.WithRequeue())
	}
	e, err := leader.New(s, path, "me", opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var held *conn.Lease
	runErr := e.Run(ctx, func(fctx context.Context, lease *conn.Lease) error {
		if held != nil {
			<-fctx.Done() // a second term: wait for the end
			return nil
		}
		held = lease
		if _, err := zc.SetACL(path, zk.WorldACL(zk.PermAll&^zk.PermDelete), -1); err != nil {
			t.Errorf("bystander setACL: %v", err)
		}
		return nil
	})
	require.NotNil(t, held, "a term ran")
	return held, e, zc, path, runErr
}

// TestLeaderRunTellsRefusedResign checks leader.Run's doc (go doc
// ./leader Election.Run): "When fn returns, Run resigns ... Run returns: ...
// otherwise fn's error, joined with a resign error if there was one", and
// Resign's "Any other error (the server refused the delete) leaves us
// leading: call Resign again": a resign the server refuses must not be
// silent.
func TestLeaderRunTellsRefusedResign(t *testing.T) {
	held, e, zc, path, runErr := leaderRunResignRefused(t, false)
	node := held.Path()
	ok, _, _ := zc.Exists(node)
	t.Logf("Run: %v; node %s exists: %v; lease Err: %v", runErr, node, ok, held.Err())
	if ok && runErr == nil {
		t.Fatalf("Run returned nil, but the term's node %s is still there: the caller was not told", node)
	}
	_, err := zc.SetACL(path, zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	if ok && held.Err() == nil {
		require.NoError(t, e.Resign(context.Background()), "Resign once the ACL is back")
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
	held, e, zc, path, runErr := leaderRunResignRefused(t, true)
	took := time.Since(start)
	node := held.Path()
	ok, _, _ := zc.Exists(node)
	t.Logf("Run after %v: %v; node %s exists: %v; lease Err: %v", took, runErr, node, ok, held.Err())
	_, err := zc.SetACL(path, zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	if !errors.Is(runErr, zk.ErrNoAuth) || errors.Is(runErr, context.DeadlineExceeded) {
		t.Errorf("Run returned %v after %v; want the resign's refusal (zk.ErrNoAuth) before its ctx ended", runErr, took.Round(time.Millisecond))
	}
	if !ok || held.Err() != nil {
		t.Fatalf("after a refused resign: node %s exists %v, lease lost %v; want the node and the lease held", node, ok, held.Err())
	}
	require.NoError(t, e.Resign(context.Background()), "Resign once the ACL is back")
	if ok, _, _ := zc.Exists(node); ok {
		t.Fatalf("node %s still there after Resign", node)
	}
}

// TestLeaderFollowerDeletedInSharedListing checks leader.Campaign's
// "Before it returns it reads our node once (the lease's Fence): a node
// deleted by someone else while we waited is not led from, and Campaign
// queues a new one and waits again", with one session's shared listings:
// L, P1 and P2 are participants of ONE session (their waiters share the
// listing), Q of another session queues last. A bystander deletes P1's
// node while it waits; L resigns. P2 leads; P1 must not run its function
// while P2's runs (in-process ledger), and must lead later, after Q (its new
// node is queued last), from a node that exists.
func TestLeaderFollowerDeletedInSharedListing(t *testing.T) {
	f, ctx := setUp(t, 25*time.Second)
	path := f.Path("lss")
	bys := f.Raw()
	s := f.Session()
	eL, _ := leader.New(s, path, "L")
	e1, _ := leader.New(s, path, "P1")
	e2, _ := leader.New(s, path, "P2")
	eQ, _ := leader.New(f.Session(), path, "Q")
	_, err := eL.Campaign(ctx)
	require.NoError(t, err)
	var occ occupancy
	order := make(chan string, 4)
	run := func(e *leader.Election, id string, hold time.Duration, queued int) {
		go func() {
			_ = e.Run(ctx, func(fctx context.Context, lease *conn.Lease) error {
				if n := occ.enter(); n != 1 {
					t.Errorf("%s: %d leaders at once", id, n)
				}
				if ok, _, err := bys.Exists(lease.Path()); err != nil || !ok {
					t.Errorf("%s: leads from a node that does not exist", id)
				}
				order <- id
				select {
				case <-time.After(hold):
				case <-fctx.Done():
				}
				occ.leave()
				return nil
			})
		}()
		waitFor(t, 10*time.Second, id+" queued", func() bool { return len(children(bys, path)) == queued })
	}
	run(e1, "P1", 200*time.Millisecond, 2)
	ps, err := eL.Participants(ctx)
	if err != nil || len(ps) != 2 {
		t.Fatalf("participants: %v %v", ps, err)
	}
	p1node := ps[1].Node
	run(e2, "P2", 500*time.Millisecond, 3)
	run(eQ, "Q", 200*time.Millisecond, 4)
	if err := bys.Delete(p1node, -1); err != nil {
		if err2 := bys.Delete(path+"/"+p1node, -1); err2 != nil {
			t.Fatalf("delete P1's node %s: %v / %v", p1node, err, err2)
		}
	}
	require.NoError(t, eL.Resign(ctx))
	var got []string
	for len(got) < 3 {
		got = append(got, recv(t, order, 10*time.Second, "terms so far %v", got))
	}
	t.Logf("terms in order: %v", got)
	if got[0] != "P2" || got[1] != "Q" || got[2] != "P1" {
		t.Errorf("want P2, Q, P1 (P1 requeued last), got %v", got)
	}
}

// TestLeaderSharedListingsRequeueCancelStress checks leader.Run
// ("fn must return promptly once its ctx is done: until it returns, it may
// still be running while another participant leads" only when the term
// ends unseen or by someone else's delete or Resign) and "A fencing token
// per grant" for terms: 2 sessions × 4 participants (WithRequeue) on one
// election path, whose Run ctx is cancelled at random (1 in 3 runs, after
// 5–80 ms) and restarted, and whose fn holds for 0–3 ms. Nobody else
// deletes or resigns, so no two fn may run at once, and every term's
// Fence (of the lease Run gives it) must be above the last one's.
func TestLeaderSharedListingsRequeueCancelStress(t *testing.T) {
	f, ctx := setUp(t, 28*time.Second)
	path := f.Path("leader")
	var occ occupancy
	var terms atomic.Int32
	var fences fenceStore
	stop := time.Now().Add(7 * time.Second)
	mk := func(s *conn.Session) *conn.Session { return s }
	onSessions(f, 2, 4, mk, func(s *conn.Session, i int) {
		id := fmt.Sprintf("s%dp%d", i/4, i%4)
		e, err := leader.New(s, path, id, leader.WithRequeue())
		if err != nil {
			t.Errorf("%s: %v", id, err)
			return
		}
		r := rand.New(rand.NewSource(int64(i)))
		for time.Now().Before(stop) {
			rctx, cancel := context.WithDeadline(ctx, stop)
			if r.Intn(3) == 0 {
				cancel()
				rctx, cancel = context.WithTimeout(ctx, time.Duration(5+r.Intn(75))*time.Millisecond)
			}
			_ = e.Run(rctx, func(fctx context.Context, lease *conn.Lease) error {
				if n := occ.enter(); n != 1 {
					t.Errorf("%s: %d leaders at once", id, n)
				}
				defer occ.leave()
				terms.Add(1)
				fe, err := lease.Fence(fctx)
				if err == nil {
					if prev, ok := fences.write(id, fe); !ok {
						t.Errorf("%s: term fence %v not above %v", id, fe, prev)
					}
				} else if fctx.Err() == nil {
					t.Errorf("%s: fence: %v", id, err)
				}
				select {
				case <-time.After(time.Duration(r.Intn(4)) * time.Millisecond):
				case <-fctx.Done():
				}
				return nil
			})
			cancel()
		}
	})
	t.Logf("%d terms", terms.Load())
	if terms.Load() < 20 {
		t.Errorf("only %d terms", terms.Load())
	}
}

// TestCampaignWritesNoLabel checks lock.WithLabel's "a leader's node data
// is its participant id, so Campaign writes no label", the node data
// Curator's LeaderLatch reads: with a label (valid, or one WithLabel would
// refuse) on its ctx, Campaign leads, its node's data is exactly the
// participant id, and Participants/Leader report no label.
func TestCampaignWritesNoLabel(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	for i, label := range []string{"req-42", "bad\nlabel"} {
		path := f.Path(fmt.Sprintf("el-label-%d", i))
		e, err := leader.New(f.Session(), path, "p1")
		require.NoError(t, err)
		l, err := e.Campaign(lock.WithLabel(ctx, label))
		if err != nil {
			t.Errorf("Campaign with label %q: %v (lock.WithLabel: \"Campaign writes no label\"; leader's Campaign doc lists only ctx's, the session's errors and ErrCampaigning)", label, err)
			continue
		}
		require.Equal(t, "p1", string(f.Data(l.Path())), "the leader node's data")
		ld, err := e.Leader(ctx)
		require.NoError(t, err)
		require.Equal(t, "", ld.Label)
		require.Equal(t, "p1", ld.ID)
		require.NoError(t, e.Resign(ctx))
	}
}

// TestObserveCancelledWhileBlackholedLeavesNoWatch: Observe "keeps one
// watch on the path, removed from the server when ctx ends", and a removed
// watch does not come back after a reconnect. Observe is cancelled while
// blackholed (the session survives), then again after an expiry: the server
// must keep no watch (mntr) and the Watches gauge must come back to 0.
func TestObserveCancelledWhileBlackholedLeavesNoWatch(t *testing.T) {
	f, ctx := setUp(t, 60*time.Second)
	path := f.Path("obsbh/l")
	f.leading(ctx, path)
	rec := &metricsRec{}
	px, s := f.ProxiedSession(conn.WithSessionTimeout(6*time.Second), conn.WithMetrics(rec.Hooks()))
	obs := electionOf(t, s, path, "observer")

	t.Run("cancel-while-blackholed", func(t *testing.T) {
		sid := epochOf(t, s).SessionID()
		octx, cancel := context.WithCancel(ctx)
		ch := obs.Observe(octx)
		recv(t, ch, 5*time.Second, "Observe gave no first value")
		waitFor(t, 5*time.Second, "Observe's watch on the server", func() bool { return serverWatches(t, f) == 1 })
		px.Blackhole()
		cancel()
		if !closesWithin(ch, 2*time.Second) {
			t.Errorf("Observe's channel still open 2 s after its ctx was cancelled (blackholed)")
		}
		px.Heal()
		waitFor(t, 10*time.Second, "reconnected", func() bool { return s.State() == conn.Reconnected })
		require.Equal(t, sid, epochOf(t, s).SessionID(), "the session survived the blackhole")
		if !eventually(3*time.Second, func() bool { return serverWatches(t, f) == 0 }) {
			t.Errorf("the server keeps %d watches after Observe was cancelled while blackholed (wchc of our session: %v)", serverWatches(t, f), sessionWatches(t, f, 0, sid))
		}
		rec.gaugeDrains(t, 3*time.Second)
	})
	t.Run("cancel-after-expiry", func(t *testing.T) {
		octx, cancel := context.WithCancel(ctx)
		ch := obs.Observe(octx)
		recv(t, ch, 5*time.Second, "Observe gave no first value")
		f.Expire(ctx, epochOf(t, s))
		waitFor(t, 10*time.Second, "a new epoch", func() bool { return s.State() == conn.Connected })
		sid := epochOf(t, s).SessionID()
		waitFor(t, 5*time.Second, "Observe's watch in the new epoch", func() bool { return serverWatches(t, f) == 1 })
		cancel()
		if !closesWithin(ch, 2*time.Second) {
			t.Errorf("Observe's channel still open 2 s after its ctx was cancelled")
		}
		if !eventually(3*time.Second, func() bool { return serverWatches(t, f) == 0 }) {
			t.Errorf("the server keeps %d watches after Observe was cancelled (session %x)", serverWatches(t, f), sid)
		}
		rec.gaugeDrains(t, 3*time.Second)
	})
}

// leading has participant "leader", on a session of its own, lead the
// election on path.
func (f *fixture) leading(ctx context.Context, path string) *leader.Election {
	f.t.Helper()
	e := electionOf(f.t, f.Session(), path, "leader")
	_, err := e.Campaign(ctx)
	require.NoError(f.t, err)
	return e
}

// serverWatches is server 0's zk_watch_count (mntr): every watch of every
// session (wchc does not list the watch Observe sets).
func serverWatches(t *testing.T, f *fixture) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	m, err := f.Mntr(ctx, 0)
	require.NoError(t, err, "mntr")
	n, err := strconv.Atoi(m["zk_watch_count"])
	require.NoError(t, err, "zk_watch_count %q", m["zk_watch_count"])
	return n
}

// TestRunWithRequeueReturnsOnClose: WithRequeue's Run "returns only when
// its ctx ends, when the function returns a non-nil error ..."; ErrClosed
// "is returned by every call made after Close". A leading Run with
// WithRequeue and a ctx that never ends has its Session closed: it must
// return within 2 s with ErrClosed, not lead again, and a waiting Campaign
// and an Observe on the same Session must end too.
func TestRunWithRequeueReturnsOnClose(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.Session()
	path := f.Path("rqclose/l")
	run := runRequeue(t, ctx, s, path)
	if tm := run.next(t, 10*time.Second); !tm.start {
		t.Fatalf("Run's first term event is an end (%v)", tm.cause)
	}
	follower := electionOf(t, s, path, "follower")
	camp := make(chan error, 1)
	go func() { _, err := follower.Campaign(ctx); camp <- err }()
	waitFor(t, 5*time.Second, "the follower queued", func() bool { return len(children(f.Raw(), path)) == 2 })
	obs := electionOf(t, s, path, "observer").Observe(ctx)
	require.NoError(t, s.Close())
	err := recv(t, run.err, 2*time.Second, "Run with WithRequeue still running 2 s after Close")
	if !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Run after Close: %v, want an error matching conn.ErrClosed", err)
	}
	for len(run.evs) > 0 {
		if tm := <-run.evs; tm.start {
			t.Errorf("Run led again after Close (node %s)", tm.node)
		}
	}
	err = recv(t, camp, 2*time.Second, "the follower's Campaign still waiting 2 s after Close")
	if !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Campaign after Close: %v, want conn.ErrClosed", err)
	}
	if !closesWithin(obs, 2*time.Second) {
		t.Errorf("Observe's channel open 2 s after Close")
	}
	waitFor(t, 5*time.Second, "no election node left", func() bool { return len(children(f.Raw(), path)) == 0 })
}

// TestLeaderFollowerDeletedByItsOwnSessionNeverLeads: "A node deleted by
// someone else while its participant waits is never led from". Session S's
// follower queues behind another session's leader; S deletes the
// follower's node (Session.Delete); the leader resigns. If the follower's
// Campaign leads, its node must exist, be first, and be named by Leader.
func TestLeaderFollowerDeletedByItsOwnSessionNeverLeads(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	path := f.Path("folown/l")
	ld := f.leading(ctx, path)
	s := f.Session()
	fe := electionOf(t, s, path, "follower")
	h := hold(ctx, electionLocker{fe})
	waitFor(t, 10*time.Second, "the follower queued", func() bool { return len(children(f.Raw(), path)) == 2 })
	fNode := path + "/" + sortedBySeq(f.Raw(), path)[1]
	require.NoError(t, s.Delete(ctx, fNode, -1))
	require.NoError(t, ld.Resign(ctx))
	select {
	case l := <-h.got:
		lead, lerr := fe.Leader(ctx)
		if l.Path() == fNode || !exists(f.Raw(), l.Path()) || lead.Node != l.Path() {
			t.Errorf("the follower leads from %s (its deleted node %s; exists %v; Leader %v, %v; lease Err %v)",
				l.Path(), fNode, exists(f.Raw(), l.Path()), lead.Node, lerr, l.Err())
		}
		require.NoError(t, h.release())
	case err := <-h.failed:
		t.Logf("the follower's Campaign failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Errorf("the follower's Campaign neither led nor failed 10 s after the leader resigned (nodes %v)", nodes{f.Raw(), path})
	}
}

// TestLeaderTermNodeRefusedInANamespaceAcrossRequeue: Session.Set refuses
// "a node named as ... an election's contender", lock.Revoke refuses an
// election's node with conn.ErrInvalidArgument, GuardedWrite refuses the
// grant's own node; WithNamespace is "a chroot that callers never see".
// A Run with WithRequeue on a namespaced, metered session: in each of two
// terms (the first ended by a bystander deleting the term's node at its
// full path) the term's own Set, Revoke and GuardedWrite into its node are
// refused and write nothing. Run then ends with its ctx: no node, no term
// open in the metrics, the watches gauge back to 0.
func TestLeaderTermNodeRefusedInANamespaceAcrossRequeue(t *testing.T) {
	f, ctx := setUp(t, 40*time.Second)
	ns := f.Path("ns")
	rec, s := f.metered(conn.WithNamespace(ns))
	e, err := leader.New(s, "/el", "me", leader.WithRequeue())
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	terms := make(chan string)
	runDone := make(chan error, 1)
	go func() {
		runDone <- e.Run(runCtx, func(tctx context.Context, l *conn.Lease) error {
			_, setErr := s.Set(tctx, l.Path(), []byte("x"), -1)
			revErr := lock.Revoke(tctx, s, l.Path())
			gwErr := guardedSet(tctx, l, l.Path(), []byte("x"), -1)
			for what, err := range map[string]error{"Session.Set": setErr, "lock.Revoke": revErr, "GuardedWrite": gwErr} {
				if !errors.Is(err, conn.ErrInvalidArgument) {
					t.Errorf("%s into the term's node %s: %v, want ErrInvalidArgument", what, l.Path(), err)
				}
			}
			select {
			case terms <- l.Path():
			case <-tctx.Done():
				return nil
			}
			<-tctx.Done()
			return nil
		})
	}()
	first := recv(t, terms, 10*time.Second, "no first term")
	require.False(t, strings.HasPrefix(first, ns), "Lease.Path %s shows the namespace", first)
	_, st, err := f.Raw().Get(ns + first)
	require.NoError(t, err, "the term's node at its full path")
	require.Equal(t, int32(0), st.Version, "the term's node was written")
	require.NoError(t, f.Raw().Delete(ns+first, -1))
	second := recv(t, terms, 10*time.Second, "no second term after the bystander's delete")
	require.NotEqual(t, first, second)
	_, st, err = f.Raw().Get(ns + second)
	require.NoError(t, err)
	require.Equal(t, int32(0), st.Version, "the second term's node was written")
	stop()
	recv(t, runDone, 5*time.Second, "Run did not return after its ctx ended")
	require.Equal(t, 0, countNodes(f.Raw(), ns), "nodes left: %v", nodes{f.Raw(), ns + "/el"})
	require.Equal(t, int64(2), rec.starts.Load(), "terms started")
	require.Equal(t, int64(2), rec.ends.Load(), "terms ended")
	rec.gaugeDrains(t, 3*time.Second)
}

// TestObserveAfterElectionPathDeleted: Observe (go doc ./leader
// Election.Observe) "returns a channel of leader changes: the current
// leader, then each new one (the zero Participant for none)". The election
// path is a container (docs/leader.md); once empty it may go (the server's
// container reaper, or an operator). A leader that campaigns after the path
// was deleted and made again must still be observed.
func TestObserveAfterElectionPathDeleted(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	zc := f.Raw()
	path := f.Path("obs-del")
	obs := electionOf(t, f.Session(), path, "observer")
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	ch := obs.Observe(octx)
	observeUntil(t, ch, 5*time.Second, "", "first value not the zero Participant")

	a := electionOf(t, f.Session(), path, "a")
	la, err := a.Campaign(ctx)
	require.NoError(t, err)
	observeUntil(t, ch, 5*time.Second, la.Path(), "Observe did not see a lead")
	require.NoError(t, a.Resign(ctx))
	observeUntil(t, ch, 5*time.Second, "", "Observe did not see nobody lead")

	// The empty election path goes (as the container reaper would do it).
	require.NoError(t, zc.Delete(path, -1))

	b := electionOf(t, f.Session(), path, "b")
	lb, err := b.Campaign(ctx)
	require.NoError(t, err)
	observeUntil(t, ch, 5*time.Second, lb.Path(), "Observe did not see b lead (%s) on the path made again", lb.Path())
	require.NoError(t, b.Resign(ctx))
	observeUntil(t, ch, 5*time.Second, "", "Observe did not see nobody lead after b")
}

// TestRunRequeueAfterResignFromAnotherGoroutine: WithRequeue "makes
// Run campaign again after a term that fn ended with nil or that was lost";
// docs/leader.md lists "a Resign from another goroutine" among the ways a
// term ends (fn's ctx cancelled with ErrLeadershipLost). Such a term is
// lost, fn returns nil: Run must campaign again, not return.
func TestRunRequeueAfterResignFromAnotherGoroutine(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	path := f.Path("requeue-resign")
	r := runRequeue(t, ctx, f.Session(), path)
	if ev := r.next(t, 10*time.Second); !ev.start {
		t.Fatalf("first event not a start")
	}
	require.NoError(t, r.e.Resign(ctx), "Resign from another goroutine")
	r.ends(t, 5*time.Second, 1, true)
	select {
	case ev := <-r.evs:
		if !ev.start {
			t.Fatalf("second event not a start")
		}
	case err := <-r.err:
		t.Fatalf("Run returned after a Resign from another goroutine instead of campaigning again: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatalf("no second term within 5 s after the Resign")
	}
	r.stop()
	r.ends(t, 5*time.Second, 2, false)
	r.canceled(t, f, path, 5*time.Second)
}

// TestLeaderRunNilFunctionIsInvalidArgument: docs/api.md, "Bad input of
// any kind is one error": Run with a nil function fails at once with
// conn.ErrInvalidArgument, saying so, and campaigns for nothing.
func TestLeaderRunNilFunctionIsInvalidArgument(t *testing.T) {
	f, ctx := setUp(t, 20*time.Second)
	path := f.Path("run-nil")
	e, err := leader.New(f.Session(), path, "p1")
	require.NoError(t, err)
	err = e.Run(ctx, nil)
	require.ErrorIs(t, err, conn.ErrInvalidArgument)
	require.ErrorContains(t, err, "leader: run "+path+": nil function")
	require.Empty(t, children(f.Raw(), path), "nodes queued by a refused Run")
}
