package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Timing of a fault-run client.
const (
	faultAcquireTimeout = 20 * time.Second // one acquire while faults run
	faultOpTimeout      = 15 * time.Second // one read or guarded write
	faultReleaseTimeout = 20 * time.Second
	faultHoldMin        = 20 * time.Millisecond
	faultHoldMax        = 150 * time.Millisecond
	faultIdleMax        = 80 * time.Millisecond
)

// faultClient is one client of the fault run: its own session, through its
// own proxy, and its own handle on every recipe. Everything it does runs on
// one goroutine, except the watchers of its grants' lost signals and its
// twin's turns on paired recipes.
type faultClient struct {
	id      int
	run     *faultRun
	sess    *conn.Session
	proxy   *zktest.Proxy
	recipes map[string]acquirer
	rng     *rand.Rand // owned by the client's goroutine

	// twin is the client's second goroutine, for paired recipes (turn): a
	// faultClient of its own (id: the client's plus the number of clients;
	// its own handles, rng and ledger names) on the client's session and
	// proxy, which runs only while the client waits for it in turn. nil on
	// a twin.
	twin *faultClient

	// cut asks the client to arm its proxy's CutAfterNextWrite right
	// before its next acquire, so that the answer to the create it sends
	// first is lost. Set by the fault schedule, cleared by the client.
	cut atomic.Bool
	// holding is true while the client holds a grant; the schedule aims
	// most client faults at holders.
	holding atomic.Bool
	// node is the grant's first lock node while the client holds it (nil
	// otherwise): where a third-party write goes.
	node atomic.Pointer[string]
	// want is the recipe the client is acquiring (nil otherwise): a
	// third-party write goes preferably to a holder someone waits behind.
	want atomic.Pointer[faultRecipe]
	// holds is the recipe of the grant held, and hold its interval, set
	// with node.
	holds atomic.Pointer[faultRecipe]
	hold  atomic.Pointer[interval]

	writeSeq int // ledger names; owned by the client's goroutine
}

// loop acquires, works under and releases random recipes until stop ends.
func (cl *faultClient) loop(stop context.Context) {
	for stop.Err() == nil {
		cl.turn(stop, cl.pick(), faultAcquireTimeout)
		idle := time.Duration(cl.rng.Int64N(int64(faultIdleMax)))
		select {
		case <-stop.Done():
		case <-time.After(idle):
		}
	}
}

// pick draws a recipe by weight.
func (cl *faultClient) pick() faultRecipe {
	total := 0
	for _, r := range faultRecipes {
		total += r.weight
	}
	n := cl.rng.IntN(total)
	for _, r := range faultRecipes {
		if n < r.weight {
			return r
		}
		n -= r.weight
	}
	panic("unreachable")
}

// turn is the client's turn on r: once, and for a paired recipe once on
// its twin at the same time, so that the two goroutines of the session
// contend for r and hand it over in the process. It returns the acquires'
// errors.
func (cl *faultClient) turn(parent context.Context, r faultRecipe, timeout time.Duration) error {
	if !r.paired || cl.twin == nil {
		return cl.once(parent, r, timeout)
	}
	twinErr := make(chan error, 1)
	go func() { twinErr <- cl.twin.once(parent, r, timeout) }()
	err := cl.once(parent, r, timeout)
	return errors.Join(err, <-twinErr)
}

// once makes one acquire of r (bounded by timeout and parent), and if it
// succeeds, works under the grant and releases it. It returns the acquire's
// error.
func (cl *faultClient) once(parent context.Context, r faultRecipe, timeout time.Duration) error {
	if cl.cut.Swap(false) {
		// The first request of the acquire that follows is the create of
		// a lock node (or of a parent container): its answer is lost.
		cl.proxy.CutAfterNextWrite()
		cl.run.countFault(faultCut)
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	cl.want.Store(&r)
	g, err := cl.recipes[r.name](ctx)
	cl.want.Store(nil)
	cancel()
	if err != nil {
		cl.run.acquireFailed(cl.id, r, err, parent.Err() != nil)
		return err
	}
	iv := cl.run.acquired(cl.id, r, g)
	cl.run.watchLost(iv, g.lost, g.leases[0].Epoch().Done())
	cl.holding.Store(true)
	defer cl.holding.Store(false)
	node := g.leases[0].Path()
	cl.holds.Store(&r)
	defer cl.holds.Store(nil)
	cl.hold.Store(iv)
	defer cl.hold.Store(nil)
	cl.node.Store(&node)
	defer cl.node.Store(nil)

	holdFor := faultHoldMin + time.Duration(cl.rng.Int64N(int64(faultHoldMax-faultHoldMin)))
	writes := 1 + cl.rng.IntN(3)
	switch r.mode {
	case modeRead:
		cl.readCheck(r, g, iv, holdFor)
	default:
		cl.write(r, g, iv, holdFor, writes)
	}

	iv.release = time.Now()
	select {
	case <-g.lost:
		iv.lostFirst = true // told before it released
	default:
	}
	cl.release(r, g)
	return nil
}

// release gives g back. A recipe that could not delete its node keeps the
// lock held and asks to be called again: so it is, until the release
// succeeds or goes on in the background, or faultReleaseTimeout passes.
func (cl *faultClient) release(r faultRecipe, g *grant) {
	ctx, cancel := context.WithTimeout(context.Background(), faultReleaseTimeout)
	defer cancel()
	for {
		err := g.release(ctx)
		switch {
		case err == nil:
			return
		case isReleasePending(err):
			cl.run.count(&cl.run.stats.releasePending)
			return
		case isNotHeld(err) || ctx.Err() != nil:
			cl.run.releaseFailed(cl.id, r, err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// guardOps is what every guarded write of g puts in front of its own ops:
// a check that each lease after the first (which GuardedWrite checks)
// still exists unchanged.
func guardOps(g *grant) []any {
	var ops []any
	for _, l := range g.leases[1:] {
		ops = append(ops, &zk.CheckVersionRequest{Path: l.Path(), Version: 0})
	}
	return ops
}

// write makes writes guarded writes under an exclusive or shared grant,
// spread over holdFor. Each increments the domain's counter and creates a
// unique ledger node in the same transaction, so that after the run the
// ledger tells which writes were applied, and the counter must equal the
// ledger's size: a lost update (two holders at once writing the same
// value) shows as a counter behind the ledger.
//
// Exclusive holders read the counter once and then write
// unconditionally (version -1), which is correct only under mutual
// exclusion: that is the point. Shared holders (the semaphore's) may
// legitimately write at the same time, so they compare-and-set.
func (cl *faultClient) write(r faultRecipe, g *grant, iv *interval, holdFor time.Duration, writes int) {
	ep := g.leases[0].Epoch()
	counter, ledger := cl.run.counterPath(r.domain), cl.run.ledgerPath(r.domain)
	val, haveVal := cl.readCounter(ep, counter, false)
	for k := 0; k < writes; k++ {
		time.Sleep(holdFor / time.Duration(writes))
		cl.writeSeq++
		name := fmt.Sprintf("c%02d-%07d", cl.id, cl.writeSeq)
		w := &writeRec{client: cl.id, recipe: r.name, domain: r.domain, ledger: name, hold: iv}
		for attempt := 1; ; attempt++ {
			version := int32(-1)
			if r.mode == modeShared || !haveVal {
				var st *zk.Stat
				val, st, haveVal = cl.readCounterStat(ep, counter)
				if haveVal {
					version = st.Version
				}
			}
			ops := append(guardOps(g),
				&zk.SetDataRequest{Path: counter, Data: []byte(strconv.FormatInt(val+1, 10)), Version: version},
				&zk.CreateRequest{Path: zkpath.Join(ledger, name), Acl: zk.WorldACL(zk.PermAll)})
			ctx, cancel := context.WithTimeout(context.Background(), faultOpTimeout)
			w.start = time.Now()
			_, err := g.leases[0].GuardedWrite(ctx, ops...)
			cancel()
			w.err = err
			w.outcome = classifyWrite(err)
			if r.mode == modeShared && w.outcome == outOther && errors.Is(err, zk.ErrBadVersion) && attempt < 5 {
				continue // another holder of the semaphore wrote first: read again
			}
			break
		}
		cl.run.recordWrite(w)
		switch w.outcome {
		case outOK:
			val++
		case outUnknown:
			// The write may or may not have been applied: learn the value
			// again, after a sync, so that the next write builds on it.
			val, haveVal = cl.readCounter(ep, counter, true)
		}
	}
}

// readCheck works under a read grant: it reads the counter's version at
// the start of the hold and, at its end, checks in a guarded transaction
// that the version has not changed. No writer may hold the lock while a
// reader does, so a changed version with our read node still there is a
// violation.
func (cl *faultClient) readCheck(r faultRecipe, g *grant, iv *interval, holdFor time.Duration) {
	ep := g.leases[0].Epoch()
	counter := cl.run.counterPath(r.domain)
	_, st, ok := cl.readCounterStat(ep, counter)
	time.Sleep(holdFor)
	if !ok {
		return
	}
	w := &writeRec{client: cl.id, recipe: r.name, domain: r.domain, check: true, hold: iv}
	ops := append(guardOps(g), &zk.CheckVersionRequest{Path: counter, Version: st.Version})
	ctx, cancel := context.WithTimeout(context.Background(), faultOpTimeout)
	w.start = time.Now()
	_, err := g.leases[0].GuardedWrite(ctx, ops...)
	cancel()
	w.err, w.outcome = err, classifyWrite(err)
	if errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, conn.ErrLeaseLost) {
		cl.run.violate("%s: the counter changed (version %d) while client %d held the read lock from %s",
			r.domain, st.Version, cl.id, iv.start.Format(time.StampMicro))
	}
	cl.run.recordWrite(w)
}

// readCounter reads the counter's value in ep, after a sync if asked.
func (cl *faultClient) readCounter(ep *conn.Epoch, path string, sync bool) (int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), faultOpTimeout)
	defer cancel()
	if sync {
		if err := connlink.Of(ep).Sync(ctx, path); err != nil {
			return 0, false
		}
	}
	data, _, err := connlink.Of(ep).Get(ctx, path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(string(data), 10, 64)
	return v, err == nil
}

func (cl *faultClient) readCounterStat(ep *conn.Epoch, path string) (int64, *zk.Stat, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), faultOpTimeout)
	defer cancel()
	data, st, err := connlink.Of(ep).Get(ctx, path)
	if err != nil {
		return 0, nil, false
	}
	v, err := strconv.ParseInt(string(data), 10, 64)
	return v, st, err == nil
}

// outcome is what a guarded write came to.
type outcome int

const (
	outOK       outcome = iota // applied
	outRejected                // refused: the grant was lost (not applied)
	outUnknown                 // fate unknown: connection lost or ctx ended in flight
	outOther                   // refused by the server for another reason (not applied)
)

func classifyWrite(err error) outcome {
	switch {
	case err == nil:
		return outOK
	case errors.Is(err, conn.ErrConnectionLoss),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return outUnknown
	case errors.Is(err, conn.ErrLeaseLost),
		errors.Is(err, zk.ErrNoNode): // the check on another lease of the grant failed
		return outRejected
	}
	return outOther
}

// isReleasePending: a release whose delete is going on in the background.
func isReleasePending(err error) bool {
	return errors.Is(err, lock.ErrReleasePending) // every lock's ErrReleasePending wraps it
}

// isNotHeld: a release of something no longer held through the handle.
func isNotHeld(err error) bool {
	return errors.Is(err, lock.ErrNotHeld)
}
