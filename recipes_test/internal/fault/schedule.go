package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// The kinds of fault the schedule injects. At most one server is down
// (killed or paused) at any time, so the ensemble keeps its quorum; a fault
// is undone before the next one starts.
const (
	faultLeaderKill     = "leader-kill-restart"
	faultFollowerKill   = "follower-kill-restart"
	faultPause          = "server-pause-resume"
	faultBlackholeLong  = "blackhole-longer-than-session"
	faultBlackholeShort = "blackhole-shorter-than-session"
	faultExpire         = "session-expire"
	faultCut            = "cut-after-create" // counted when the client arms it
	faultThirdParty     = "third-party-write-into-holder-node"
)

var faultKinds = []string{faultLeaderKill, faultFollowerKill, faultPause, faultBlackholeLong,
	faultBlackholeShort, faultExpire, faultCut, faultThirdParty}

// schedule injects random faults, drawn from rng, until the deadline, and
// returns once the last one is undone and every server serves again. The
// kinds come in rounds, each a shuffle of all of them, so that every kind
// occurs in any run of a few rounds.
func (r *faultRun) schedule(rng *rand.Rand, deadline time.Time) {
	t := r.t
	begin := time.Now()
	var bag []string
	for time.Now().Before(deadline) {
		gap := 300*time.Millisecond + time.Duration(rng.Int64N(int64(1700*time.Millisecond)))
		time.Sleep(min(gap, max(time.Until(deadline), 0)))
		if !time.Now().Before(deadline) {
			break
		}
		if len(bag) == 0 {
			for _, i := range rng.Perm(len(faultKinds)) {
				bag = append(bag, faultKinds[i])
			}
		}
		kind := bag[0]
		bag = bag[1:]
		at := time.Since(begin).Round(100 * time.Millisecond)
		desc, err := r.inject(rng, kind)
		if err != nil {
			// A fault that could not be applied is not a failure of the
			// recipes, but a run whose faults do not apply proves nothing:
			// requireFigures fails it below a minimum per kind.
			t.Logf("fault run: +%v %s: not applied: %v", at, kind, err)
			r.mu.Lock()
			r.stats.faultsSkipped++
			r.stats.notApplied[kind]++
			r.mu.Unlock()
			continue
		}
		if kind != faultCut {
			r.countFault(kind)
		}
		t.Logf("fault run: +%v %s %s", at, kind, desc)
	}
	r.heal()
}

// inject applies one fault of the given kind and undoes it, except
// faultCut, which the chosen client arms itself before its next acquire.
func (r *faultRun) inject(rng *rand.Rand, kind string) (string, error) {
	c := r.c
	st := r.cfg.sessionTimeout
	switch kind {
	case faultLeaderKill, faultFollowerKill:
		return killRestart(r.t, c, rng, kind == faultLeaderKill)

	case faultPause:
		return pauseResume(c, rng)

	case faultBlackholeLong, faultBlackholeShort:
		cl := r.pickClient(rng)
		holding := cl.holding.Load()
		d := blackholeFor(rng, cl.proxy, st, kind == faultBlackholeLong)
		return fmt.Sprintf("client %d for %v (session timeout %v; holding a lock: %v)", cl.id, d.Round(time.Millisecond), st, holding), nil

	case faultExpire:
		cl := r.pickClient(rng)
		holding := cl.holding.Load()
		sid, srv, err := expireSession(c, rng, cl.sess, func(sid int64) {
			r.mu.Lock()
			r.expired[sid] = time.Now()
			r.mu.Unlock()
		})
		if err != nil {
			return "", fmt.Errorf("client %d: %w", cl.id, err)
		}
		return fmt.Sprintf("client %d session 0x%x via %s (holding a lock: %v)", cl.id, sid, srv, holding), nil

	case faultCut:
		cl := r.clients[rng.IntN(len(r.clients))]
		cl.cut.Store(true)
		return fmt.Sprintf("armed for client %d's next acquire", cl.id), nil

	case faultThirdParty:
		return r.thirdPartyWrite(rng)
	}
	return "", fmt.Errorf("unknown fault kind %q", kind)
}

// pickClient picks the client to fault: three times in four one that
// holds a lock at that moment (a client or a twin, whose fault is its
// client's session's), if any does, so that holders lose their locks;
// otherwise any client (which may be waiting in a queue).
func (r *faultRun) pickClient(rng *rand.Rand) *faultClient {
	var holders []*faultClient
	for _, cl := range r.everyClient() {
		if cl.holding.Load() {
			holders = append(holders, cl)
		}
	}
	if len(holders) > 0 && rng.IntN(4) != 0 {
		return holders[rng.IntN(len(holders))]
	}
	return r.clients[rng.IntN(len(r.clients))]
}

// everyClient returns the clients and their twins (which share their
// sessions and proxies): a fault aimed at a twin holder hits its client's
// session.
func (r *faultRun) everyClient() []*faultClient {
	out := append([]*faultClient(nil), r.clients...)
	for _, cl := range r.clients {
		out = append(out, cl.twin)
	}
	return out
}

// heal ends every fault: proxies forward again, every server runs and the
// ensemble has a leader.
func (r *faultRun) heal() {
	var proxies []*zktest.Proxy
	for _, cl := range r.clients {
		proxies = append(proxies, cl.proxy)
		cl.cut.Store(false)
	}
	healAll(r.t, r.c, proxies)
}

// Third-party writes: how long to look for a holder, and how many holders
// to try (one may release between being picked and being written to).
const (
	thirdPartyWait  = 3 * time.Second
	thirdPartyTries = 5
)

// thirdPartyWrite is a raw go-zookeeper client of its own, not a client of
// the run, setting the data of a current holder's lock node (the first
// lease of its grant) with version -1, as a careless tool or Curator's
// Revoker would. It is applied when the write reached an existing holder
// node: accepted (the node was writable) or refused with zk.ErrNoAuth (the
// node is writable by its creator only); both are counted. The client
// connects for the one write and closes: it holds no watch and never
// reconnects.
func (r *faultRun) thirdPartyWrite(rng *rand.Rand) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	zc, err := bystanderClient(ctx, r.c.Servers())
	if err != nil {
		return "", err
	}
	defer zc.Close()
	var last error
	for try := 0; try < thirdPartyTries; try++ {
		cl, node, iv := r.pickHolder(rng)
		if node == "" {
			return "", errors.New("no client held an exclusive lock")
		}
		at := time.Now()
		_, err := zc.Set(node, []byte("third-party write"), -1)
		switch {
		case err == nil:
			r.thirdPartyWrote(iv, at, &r.stats.thirdPartyAccepted)
			return fmt.Sprintf("into client %d's %s (%s): accepted", cl.id, node, iv.recipe), nil
		case errors.Is(err, zk.ErrNoAuth):
			r.thirdPartyWrote(iv, at, &r.stats.thirdPartyRefused)
			return fmt.Sprintf("into client %d's %s (%s): refused (%v)", cl.id, node, iv.recipe, err), nil
		case errors.Is(err, zk.ErrNoNode):
			last = fmt.Errorf("client %d's %s was already gone", cl.id, node) // released: pick again
		default:
			return "", fmt.Errorf("set %s: %w", node, err)
		}
	}
	return "", last
}

// thirdPartyWrote records a third-party write that reached the node of
// hold iv at (or just after) at, and counts it.
func (r *faultRun) thirdPartyWrote(iv *interval, at time.Time, count *int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*count++
	r.thirdParty = append(r.thirdParty, thirdPartyRec{hold: iv, at: at})
}

// pickHolder returns a client that holds an exclusive grant, its grant's
// first lock node and its hold, waiting up to thirdPartyWait for one (""
// if none). It prefers a holder that another client is waiting behind
// (acquiring a recipe of the same domain), whom a forged handover would
// let in.
func (r *faultRun) pickHolder(rng *rand.Rand) (*faultClient, string, *interval) {
	deadline := time.Now().Add(thirdPartyWait)
	for {
		waiting := map[string]bool{}
		for _, cl := range r.everyClient() {
			if w := cl.want.Load(); w != nil {
				waiting[w.domain] = true
			}
		}
		var holders, blocking []*faultClient
		for _, cl := range r.everyClient() {
			h := cl.holds.Load()
			if h == nil || h.mode != modeExclusive {
				continue
			}
			holders = append(holders, cl)
			if waiting[h.domain] {
				blocking = append(blocking, cl)
			}
		}
		late := time.Now().After(deadline)
		pick := blocking
		if len(pick) == 0 && late {
			pick = holders
		}
		if len(pick) > 0 {
			cl := pick[rng.IntN(len(pick))]
			p, iv := cl.node.Load(), cl.hold.Load()
			if p != nil && iv != nil && cl.holds.Load() != nil {
				return cl, *p, iv
			}
			continue // it released meanwhile
		}
		if late {
			return nil, "", nil
		}
		time.Sleep(5 * time.Millisecond) // polling the clients' state, not hiding a race
	}
}
