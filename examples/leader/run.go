package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// participant is one process: a session and its election handle.
type participant struct {
	name  string
	sess  *conn.Session
	proxy *zktest.Proxy // nil unless connected through one
	e     *leader.Election
	terms chan term // one per term, when it starts
	done  chan error

	started bool  // run was called
	ended   bool  // Run's result has been taken from done
	result  error // Run's result, once ended
}

// wait returns Run's result, waiting for it the first time.
func (p *participant) wait() error {
	if !p.ended {
		p.result, p.ended = <-p.done, true
	}
	return p.result
}

// term is one stretch of leadership as its function saw it.
type term struct {
	lease *conn.Lease
	ctx   context.Context
}

func newParticipant(ctx context.Context, name string, servers []string, path string, proxied bool) (*participant, error) {
	p := &participant{name: name, terms: make(chan term, 1), done: make(chan error, 1)}
	addrs := servers
	if proxied {
		px, err := zktest.StartProxy(servers)
		if err != nil {
			return nil, err
		}
		p.proxy, addrs = px, px.Addrs()
	}
	s, err := conn.Connect(ctx, addrs, conn.WithSessionTimeout(4*time.Second))
	if err != nil {
		p.close()
		return nil, err
	}
	p.sess = s
	if p.e, err = leader.New(s, path, name); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *participant) close() {
	if p.sess != nil {
		p.sess.Close()
	}
	if p.proxy != nil {
		p.proxy.Close()
	}
}

// run leads while it may: the function announces its term and works until
// its ctx is cancelled.
func (p *participant) run(ctx context.Context) {
	p.started = true
	go func() {
		p.done <- p.e.Run(ctx, func(fctx context.Context, lease *conn.Lease) error {
			p.terms <- term{lease: lease, ctx: fctx}
			<-fctx.Done()
			return fctx.Err()
		})
	}()
}

func waitTerm(p *participant, d time.Duration) (term, error) {
	select {
	case t := <-p.terms:
		return t, nil
	case <-time.After(d):
		return term{}, fmt.Errorf("%s did not take over within %v", p.name, d)
	}
}

func cancelled(t term, d time.Duration) error {
	select {
	case <-t.ctx.Done():
		return nil
	case <-time.After(d):
		return fmt.Errorf("a term's ctx was not cancelled within %v", d)
	}
}

// lockedWriter serialises the story's writers (the observer prints too).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// run tells the story against servers, on out.
func run(ctx context.Context, servers []string, w io.Writer) (err error) {
	out := &lockedWriter{w: w}
	root := fmt.Sprintf("/zkrecipes-examples/leader-%x", time.Now().UnixNano())
	path, ledger := root+"/election", root+"/ledger"
	var ps []*participant
	defer func() {
		for _, p := range ps {
			p.close()
		}
	}()
	for _, name := range []string{"alice", "bob", "carol"} {
		p, err := newParticipant(ctx, name, servers, path, name == "bob")
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	alice, bob, carol := ps[0], ps[1], ps[2]
	if err := demo.CreateParents(ctx, carol.sess, ledger); err != nil {
		return err
	}
	if _, err := carol.sess.Create(ctx, ledger, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, carol.sess.Delete(context.WithoutCancel(ctx), ledger, -1)) }()
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		for _, p := range ps {
			if p.started {
				_ = p.wait()
			}
		}
		wg.Wait()
	}()

	// Observe, from carol's handle, who leads.
	obs := carol.e.Observe(rctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for who := range obs {
			if who.Node != "" {
				fmt.Fprintf(out, "   (observed: %s leads)\n", who.ID)
			}
		}
	}()

	// 1. alice leads.
	fmt.Fprintln(out, "1. alice, bob and carol campaign, in that order.")
	alice.run(rctx)
	ta, err := waitTerm(alice, 20*time.Second)
	if err != nil {
		return err
	}
	for i, p := range []*participant{bob, carol} {
		p.run(rctx)
		if err := queued(rctx, carol.e, 2+i); err != nil { // in line before the next starts
			return err
		}
	}
	tokA, err := ta.lease.Fence(ctx)
	if err != nil {
		return err
	}
	if _, err := ta.lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: ledger, Data: []byte("alice"), Version: -1}); err != nil {
		return fmt.Errorf("alice's write as leader: %w", err)
	}
	fmt.Fprintf(out, "   alice leads with fencing token %v and writes the ledger.\n", tokA)

	// 2. alice's session expires.
	fmt.Fprintln(out, "2. alice's session is expired by the server (a long GC pause).")
	aep := ta.lease.Epoch()
	if err := zktest.ExpireEpoch(ctx, servers[0], aep); err != nil {
		return err
	}
	if err := cancelled(ta, 20*time.Second); err != nil {
		return fmt.Errorf("alice: %w", err)
	}
	fmt.Fprintf(out, "   alice's work is cancelled: %v\n", context.Cause(ta.ctx))
	tb, err := waitTerm(bob, 20*time.Second)
	if err != nil {
		return err
	}
	tokB, err := tb.lease.Fence(ctx)
	if err != nil {
		return err
	}
	if tokB.Compare(tokA) <= 0 {
		return fmt.Errorf("bob's token %v does not exceed alice's %v", tokB, tokA)
	}
	fmt.Fprintf(out, "   bob takes over with token %v.\n", tokB)
	_, err = ta.lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: ledger, Data: []byte("alice, late"), Version: -1})
	if !errors.Is(err, conn.ErrLeaseLost) {
		return fmt.Errorf("alice's stale write was not refused: %v", err)
	}
	fmt.Fprintf(out, "   alice's late guarded write is refused: %v\n", err)
	if err := alice.wait(); !errors.Is(err, leader.ErrLeadershipLost) {
		return fmt.Errorf("alice's Run: %v, want leadership lost", err)
	}

	// 3. bob is cut off.
	fmt.Fprintln(out, "3. bob is cut off from ZooKeeper (as if his process were killed).")
	bob.proxy.Blackhole()
	if err := cancelled(tb, 20*time.Second); err != nil {
		return fmt.Errorf("bob: %w", err)
	}
	fmt.Fprintf(out, "   bob's own timer cancels his work: %v\n", context.Cause(tb.ctx))
	tc, err := waitTerm(carol, 30*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   carol takes over once the server expired bob's session (after the 4s session timeout).\n")
	if tb.ctx.Err() == nil {
		return errors.New("two leaders: carol leads while bob's term is live")
	}
	if _, err := tc.lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: ledger, Data: []byte("carol"), Version: -1}); err != nil {
		return fmt.Errorf("carol's write as leader: %w", err)
	}
	bob.proxy.Heal()
	fmt.Fprintln(out, "   carol writes the ledger. One leader at a time throughout.")
	return nil
}

// queued waits until n participants are in line.
func queued(ctx context.Context, e *leader.Election, n int) error {
	for {
		ps, err := e.Participants(ctx)
		if err != nil {
			return err
		}
		if len(ps) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
