package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The operations an actor draws, with their default weights (per mille;
// ZKRECIPES_CHAOS_WEIGHTS overrides any, e.g. "revoke=300,close=0").
var chaosOpWeights = map[string]int{
	"acquire":       300, // blocking Acquire/Campaign, deadline 0.1–5 s (0.1–1 s while holding), a third cancelled midway
	"try":           100, // TryAcquire
	"release":       350, // Release of a grant of its own
	"work":          200, // read-modify-write of the znode register (GuardedWrite) and the fenced store (Fence)
	"release-wrong": 40,  // Release of another actor's handle of the same session
	"revoke":        50,  // Revoke of any grant's node, through any session (the holder's included)
	"run":           40,  // leader.Run
	"inspect":       50,  // Lost, Revoked (a revoked holder releases), Err, Fence, CheckOp
	"close":         2,   // Session.Close, then a new session for every actor of it
}

var chaosOpNames = []string{"acquire", "try", "release", "work", "release-wrong", "revoke", "run", "inspect", "close"}

// chaosSession is one client process's session, through its own proxy. A
// Close replaces it by a new one (gen+1); the actors reopen their handles.
type chaosSession struct {
	idx    int
	proxy  *zktest.Proxy
	retry1 bool // conn.WithRetry with maxAttempts 1

	mu      sync.Mutex
	sess    *conn.Session
	gen     int
	closing bool

	cut   atomic.Bool // arm CutAfterNextWrite before the next acquire
	ghost atomic.Bool // arm the lost-create-answer sequence before the next acquire
	held  atomic.Int32
}

func (s *chaosSession) current() (*conn.Session, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess, s.gen
}

// chaosActor is one goroutine of a session, with its own handles.
type chaosActor struct {
	id      int
	r       *chaosRun
	s       *chaosSession
	rng     *rand.Rand
	gen     int
	handles atomic.Pointer[map[string]*chaosHandle]
}

func (a *chaosActor) hs() map[string]*chaosHandle { return *a.handles.Load() }

// refresh reopens the actor's handles on its session's current
// generation; grants of the previous one are over (Close ended them).
func (a *chaosActor) refresh() bool {
	sess, gen := a.s.current()
	if a.handles.Load() != nil && gen == a.gen {
		return true
	}
	if a.handles.Load() != nil {
		for _, h := range a.hs() {
			if g := h.cur.Swap(nil); g != nil {
				a.r.mon.released(g)
				a.s.held.Add(-1)
			}
		}
	}
	hs, err := openChaosHandles(sess, a.r.lockRoot, a.id)
	if err != nil {
		a.r.count("open handles: " + errClass(err))
		return false
	}
	a.handles.Store(&hs)
	a.gen = gen
	return true
}

func (a *chaosActor) loop(stop context.Context) {
	for stop.Err() == nil {
		if !a.refresh() {
			sleepCtx(stop, 100*time.Millisecond)
			continue
		}
		op := a.r.pickOp(a.rng)
		a.r.count("op " + op)
		switch op {
		case "acquire":
			a.acquire(stop, false)
		case "try":
			a.acquire(stop, true)
		case "release":
			a.releaseOwn()
		case "work":
			if h := a.pickHeld(); h != nil {
				a.work(stop, h.cur.Load())
			}
		case "release-wrong":
			a.releaseWrong()
		case "revoke":
			a.revoke(stop)
		case "run":
			a.run(stop)
		case "inspect":
			a.inspect(stop)
		case "close":
			a.r.reopenSession(stop, a.s)
		}
		sleepCtx(stop, time.Duration(a.rng.Int64N(int64(30*time.Millisecond))))
	}
	for _, h := range a.hs() { // give back what is held, as a process that stops would
		if g := h.cur.Swap(nil); g != nil {
			a.r.mon.released(g)
			a.s.held.Add(-1)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = h.release(ctx)
			cancel()
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// heldDomains is the set of domains the actor holds a grant of.
func (a *chaosActor) heldDomains() map[string]bool {
	out := map[string]bool{}
	for _, h := range a.hs() {
		if h.cur.Load() != nil {
			for _, d := range h.lock.domains {
				out[d] = true
			}
		}
	}
	return out
}

func (a *chaosActor) pickHeld() *chaosHandle {
	var held []*chaosHandle
	for _, l := range chaosLocks {
		if h := a.hs()[l.name]; h.cur.Load() != nil {
			held = append(held, h)
		}
	}
	if len(held) == 0 {
		return nil
	}
	return held[a.rng.IntN(len(held))]
}

// acquire takes a lock none of whose domains the actor holds (an actor
// never waits for itself), blocking with a deadline (a third of the time
// cancelled earlier) or with TryAcquire.
func (a *chaosActor) acquire(stop context.Context, try bool) {
	held := a.heldDomains()
	var can []*chaosHandle
	for _, l := range chaosLocks {
		free := a.r.cfg.locks[l.name] && (!try || l.try)
		for _, d := range l.domains {
			free = free && !held[d]
		}
		for w := 0; free && w < l.weight; w++ {
			can = append(can, a.hs()[l.name])
		}
	}
	if len(can) == 0 {
		return
	}
	h := can[a.rng.IntN(len(can))]
	ghost := a.armFaults()
	longest := 5 * time.Second
	if len(held) > 0 {
		longest = time.Second // a holder that waits for more keeps others waiting
	}
	deadline := 100*time.Millisecond + time.Duration(a.rng.Int64N(int64(longest-100*time.Millisecond)))
	if ghost {
		deadline = 3 * a.r.cfg.sessionTimeout // outlives both dark periods
	}
	ctx, cancel := context.WithTimeout(stop, deadline)
	defer cancel()
	if !try && !ghost && a.rng.IntN(3) == 0 {
		t := time.AfterFunc(time.Duration(a.rng.Int64N(int64(deadline))), cancel)
		defer t.Stop()
	}
	var leases []*conn.Lease
	var err error
	kind := "acquire"
	if try {
		kind = "try"
		var ok bool
		leases, ok, err = h.tryAcq(ctx)
		if err == nil && !ok {
			a.r.count("try " + h.lock.name + ": busy")
			return
		}
	} else {
		a.r.mon.waiting(h.lock, +1)
		leases, err = h.acquire(ctx)
		a.r.mon.waiting(h.lock, -1)
	}
	start := time.Now()
	if err != nil {
		a.r.count(kind + ": " + errClass(err))
		return
	}
	a.r.count(kind + " " + h.lock.name + ": granted")
	g := a.grant(h, leases, start)
	a.work(stop, g) // what a holder is there for
}

// grant registers a grant through h.
func (a *chaosActor) grant(h *chaosHandle, leases []*conn.Lease, start time.Time) *chaosGrant {
	g := a.r.mon.granted(h.lock, a.id, a.s.idx, a.gen, leases, start)
	if g.local {
		a.r.count("local handoffs " + h.lock.name)
		a.r.mon.event(leases[0].Path(), "handed over locally to actor %d", a.id)
	}
	h.cur.Store(g)
	a.s.held.Add(1)
	// Half the holders watch Lost from the grant on; the others look only
	// when they release (a holder that never asks).
	watch := a.rng.IntN(2) == 0
	a.r.watchers.Add(2)
	go func() {
		defer a.r.watchers.Done()
		if !watch {
			select {
			case <-g.relCh:
			case <-leases[0].Epoch().Done():
			}
		}
		<-leases[0].Lost() // closes on release or at the session's end at the latest
		g.lostAt.Store(time.Now().UnixNano())
	}()
	go func() {
		defer a.r.watchers.Done()
		ep := leases[0].Epoch()
		<-ep.Done() // closes when the session ends at the latest
		g.byTimer.Store(errors.Is(ep.Err(), conn.ErrSessionTimeout))
		g.ended.Store(time.Now().UnixNano())
	}()
	return g
}

// armFaults arms the session's pending acquire faults: a cut right after
// the next request (a create), or the lost create answer of a bounded
// retry policy: dark right after the create, for 0.3 of the session
// timeout, back, and dark again 0–50 ms later for as long (the session
// lives on).
func (a *chaosActor) armFaults() (ghost bool) {
	if a.s.cut.Swap(false) {
		a.s.proxy.CutAfterNextWrite()
		a.r.countFault(faultCut)
	}
	if ghost = a.s.ghost.Swap(false); ghost {
		a.s.proxy.BlackholeAfterNextWrite()
		a.r.countFault(faultGhost)
		d := a.r.cfg.sessionTimeout * 3 / 10 // twice, still short of the session timeout
		gap := time.Duration(a.rng.Int64N(int64(50 * time.Millisecond)))
		a.r.faultsBusy.Add(1)
		go func() {
			defer a.r.faultsBusy.Done()
			time.Sleep(d)
			a.s.proxy.Heal()
			time.Sleep(gap)
			a.s.proxy.Blackhole()
			time.Sleep(d)
			a.s.proxy.Heal()
		}()
	}
	return ghost
}

// releaseOwn releases one of the actor's grants (a lost one first).
func (a *chaosActor) releaseOwn() {
	h := a.pickHeld()
	for _, c := range a.hs() {
		if g := c.cur.Load(); g != nil && g.leases[0].Err() != nil {
			h = c
		}
	}
	if h == nil {
		return
	}
	a.release(h, "release")
}

// release releases the grant of h (the actor's own handle or, for
// release-wrong, another actor's).
func (a *chaosActor) release(h *chaosHandle, kind string) {
	g := h.cur.Load()
	if g == nil {
		return
	}
	a.r.mon.releasing(g)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := h.release(ctx)
	cancel()
	done := err == nil || isReleasePending(err) || isNotHeld(err)
	a.r.mon.releaseDone(g, done)
	a.r.count(kind + " " + h.lock.name + ": " + errClass(err))
	a.r.mon.event(g.leases[0].Path(), "%s of actor %d's grant by actor %d: %s", kind, g.actor, a.id, errClass(err))
	if done && h.cur.CompareAndSwap(g, nil) {
		a.s.held.Add(-1)
	} // else still held: the holder releases it again later
}

// releaseWrong calls Release on another actor's handle of the same
// session that holds a grant: an error for a lock owned by its goroutine
// (mutex, rwlock), a release for the others.
func (a *chaosActor) releaseWrong() {
	var cands []*chaosHandle
	for _, p := range a.r.actors {
		if p == a || p.s != a.s || p.handles.Load() == nil {
			continue
		}
		for _, h := range p.hs() {
			if h.cur.Load() != nil {
				cands = append(cands, h)
			}
		}
	}
	if len(cands) == 0 {
		return
	}
	h := cands[a.rng.IntN(len(cands))]
	if h.lock.anyRel {
		a.release(h, "release-wrong")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := h.release(ctx)
	cancel()
	a.r.count("release-wrong " + h.lock.name + ": " + errClass(err))
	if err == nil {
		a.r.violate("%s: Release from a goroutine that does not hold it succeeded", h.lock.name)
	}
}

// revoke asks the holder of a grant of any session to release, through
// a handle of this actor on the grant's path.
func (a *chaosActor) revoke(stop context.Context) {
	g := a.r.mon.randomActive(a.rng)
	if g == nil {
		return
	}
	var with *chaosHandle
	var node string
	switch g.lock.domains[0] {
	case domMutex:
		with, node = a.hs()["mutex"], g.lease(domMutex).Path()
	case domSemMutex:
		with, node = a.hs()["semmutex"], g.lease(domSemMutex).Path()
	case domRW:
		with, node = a.hs()["rw-write"], g.lease(domRW).Path()
	default:
		return
	}
	own := "another session's"
	if g.sid == a.s.sessID() {
		own = "its own session's"
	}
	ctx, cancel := context.WithTimeout(stop, 5*time.Second)
	err := with.revoke(ctx, node)
	cancel()
	a.r.mon.event(node, "revoked by actor %d (%s grant): %s", a.id, own, errClass(err))
	a.r.count(fmt.Sprintf("revoke %s grant: %s", own, errClass(err)))
}

func (s *chaosSession) sessID() int64 {
	sess, _ := s.current()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ep, err := connlink.Of(sess).Epoch(ctx)
	if err != nil {
		return 0
	}
	return ep.SessionID()
}

// run leads through leader.Run for a while, working under the term.
func (a *chaosActor) run(stop context.Context) {
	h := a.hs()["leader"]
	if h.cur.Load() != nil || !a.r.cfg.locks["leader"] {
		return
	}
	deadline := 500*time.Millisecond + time.Duration(a.rng.Int64N(int64(4500*time.Millisecond)))
	ctx, cancel := context.WithTimeout(stop, deadline)
	defer cancel()
	a.r.mon.waiting(h.lock, +1)
	waiting := true
	err := h.elect.Run(ctx, func(ctx context.Context, lease *conn.Lease) error {
		a.r.mon.waiting(h.lock, -1)
		waiting = false
		g := a.grant(h, []*conn.Lease{lease}, time.Now())
		a.r.count("run: led")
		for i := a.rng.IntN(3); i >= 0 && ctx.Err() == nil; i-- {
			a.work(ctx, g)
			sleepCtx(ctx, time.Duration(a.rng.Int64N(int64(100*time.Millisecond))))
		}
		a.r.mon.released(g)
		if h.cur.CompareAndSwap(g, nil) {
			a.s.held.Add(-1)
		}
		return nil
	})
	if waiting {
		a.r.mon.waiting(h.lock, -1)
	}
	a.r.count("run: " + errClass(err))
}

// inspect reads a held grant's signals; a revoked holder releases, as a
// cooperative holder does.
func (a *chaosActor) inspect(stop context.Context) {
	h := a.pickHeld()
	if h == nil {
		return
	}
	g := h.cur.Load()
	if g == nil {
		return
	}
	l := g.leases[0]
	_ = connlink.Of(l).CheckOp()
	_ = l.Err()
	ctx, cancel := context.WithTimeout(stop, 2*time.Second)
	_, err := l.Fence(ctx)
	cancel()
	a.r.count("inspect fence: " + errClass(err))
	select {
	case <-l.Lost():
		a.r.count("inspect: lost")
	case <-l.Revoked():
		a.r.count("inspect: revoked, releasing")
		a.release(h, "release")
	default:
	}
}

// work makes, under g, one read-modify-write of each of its domains'
// znode register (a read, then a GuardedWrite of read+1 with version -1,
// checking the grant's other leases: correct only under mutual exclusion)
// and of its fenced store (with the lease's Fence); a reader reads the
// register and confirms the read with a guarded version check. Each
// operation is recorded for Porcupine.
func (a *chaosActor) work(stop context.Context, g *chaosGrant) {
	if g == nil {
		return
	}
	for _, d := range g.lock.domains {
		l := g.lease(d)
		var others []any
		for _, o := range g.leases {
			if o != l {
				others = append(others, connlink.Of(o).CheckOp())
			}
		}
		ctx, cancel := context.WithTimeout(stop, 5*time.Second)
		a.workZnode(ctx, g, d, l, others)
		a.workFence(ctx, g, d, l)
		cancel()
	}
}

func (a *chaosActor) workZnode(ctx context.Context, g *chaosGrant, d string, l *conn.Lease, others []any) {
	reg := a.r.registerPath(d)
	call := time.Now()
	data, st, err := connlink.Of(l.Epoch()).Get(ctx, reg)
	if err != nil {
		a.r.count("work read: " + errClass(err))
		return
	}
	v, _ := strconv.ParseInt(string(data), 10, 64)
	in := regInput{store: "znode", domain: d, rmw: g.lock.mode != modeRead, read: v}
	var ops []any
	if in.rmw {
		sleepCtx(ctx, time.Duration(a.rng.Int64N(int64(20*time.Millisecond)))) // computing the new value
		ops = append(others, &zk.SetDataRequest{Path: reg, Data: []byte(strconv.FormatInt(v+1, 10)), Version: -1})
	} else {
		ops = append(others, &zk.CheckVersionRequest{Path: reg, Version: st.Version})
	}
	_, err = l.GuardedWrite(ctx, ops...)
	ret := time.Now()
	a.r.count("work guarded: " + errClass(err))
	switch classifyWrite(err) {
	case outOK:
		a.r.record(regOp{in: in, status: regOK, actor: a.id, call: call, ret: ret})
	case outUnknown:
		if in.rmw {
			a.r.record(regOp{in: in, status: regUnknown, actor: a.id, call: call, ret: ret})
		}
	}
}

func (a *chaosActor) workFence(ctx context.Context, g *chaosGrant, d string, l *conn.Lease) {
	f, err := l.Fence(ctx)
	if err != nil {
		a.r.count("work fence: " + errClass(err))
		return
	}
	store := a.r.stores[d]
	call := time.Now()
	v, ok := store.read(f)
	if !ok {
		a.r.count("work fence: refused")
		return
	}
	in := regInput{store: "fence", domain: d, rmw: g.lock.mode != modeRead, read: v, fence: f.String()}
	if in.rmw {
		sleepCtx(ctx, time.Duration(a.rng.Int64N(int64(20*time.Millisecond))))
		if !store.write(f, v+1) {
			a.r.count("work fence: refused")
			return
		}
	}
	a.r.count("work fence: ok")
	a.r.record(regOp{in: in, status: regOK, actor: a.id, call: call, ret: time.Now()})
}

// errClass names an error by the sentinel it matches, for the counts.
func errClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{context.DeadlineExceeded, "deadline"}, {context.Canceled, "cancelled"},
		{lock.ErrNotRevocable, "not revocable"}, {lock.ErrNotOwner, "not owner"}, {lock.ErrNotHeld, "not held"},
		{lock.ErrReleasePending, "release pending"}, {conn.ErrLeaseLost, "lease lost"}, {conn.ErrClosed, "closed"},
		{conn.ErrSessionExpired, "session expired"}, {conn.ErrConnectionLoss, "connection loss"},
		{leader.ErrLeadershipLost, "leadership lost"}, {zk.ErrNoNode, "no node"}, {zk.ErrNoAuth, "no auth"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	if err == nil {
		return "ok"
	}
	return "other: " + err.Error()
}
