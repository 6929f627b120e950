package fault

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/zkrecipes/zkrecipes/conn"
)

// chaosGrant is one grant, as an actor saw it: Acquire (TryAcquire,
// Campaign, Run's function) returned at start. released is set, under the
// monitor's lock, when a Release of it is called (by anyone), or when its
// session is closed; lostAt when its first lease's Lost closed.
type chaosGrant struct {
	id        int
	lock      *chaosLock
	actor     int
	sess      int   // the chaos session's index
	gen       int   // and its generation
	sid       int64 // the ZooKeeper session of its leases
	leases    []*conn.Lease
	start     time.Time
	local     bool // a handoff handle's grant on a node granted before (a local handoff)
	relTime   time.Time
	relCh     chan struct{} // closed by the first releasing
	releasers int           // Release calls under way (guarded by the monitor's mu)
	over      bool          // a Release succeeded, or the grant ended otherwise
	lostAt    atomic.Int64  // unix ns; 0: not yet
	ended     atomic.Int64  // unix ns when its first lease's epoch ended; 0: not yet
	byTimer   atomic.Bool   // that epoch was ended by the local timer (conn.ErrSessionTimeout); set before ended
}

func (g *chaosGrant) lease(domain string) *conn.Lease {
	for i, d := range g.lock.domains {
		if d == domain {
			return g.leases[i]
		}
	}
	return nil
}

func conflicting(a, b *chaosGrant) bool {
	return a.lock.mode == modeExclusive || b.lock.mode == modeExclusive
}

// chaosMonitor checks at the API, as grants come and go: no two
// conflicting grants of one domain both report held (not released,
// Err() == nil) at any grant, outside the documented windows; and no
// domain stays without a holder while acquires wait, for longer than a
// bound.
type chaosMonitor struct {
	r  *chaosRun
	mu sync.Mutex
	// guarded by mu:
	nextID      int
	active      map[string][]*chaosGrant // per domain: grants not released
	grants      []*chaosGrant
	pending     map[string]int       // blocking acquires under way, per domain
	nodes       map[string]int       // grants per lock node (local handoffs)
	deleted     map[string]time.Time // lock node -> when a bystander sent its delete
	deleteDone  map[string]time.Time // lock node -> when the bystander's delete was answered
	sessFaults  map[int64]time.Time  // ZooKeeper session -> last session-ending fault aimed at it
	stuckSince  map[string]time.Time
	stuckWorst  map[string]time.Duration
	stuckTold   map[string]bool
	overlapWins map[string][]time.Duration // per excuse: measured windows
	events      map[string][]string        // lock node -> what happened to it (revokes, bystander)
	byNode      map[string][]*chaosGrant   // lock node -> its grants
	checks      sync.WaitGroup
}

func newChaosMonitor(r *chaosRun) *chaosMonitor {
	return &chaosMonitor{r: r, active: map[string][]*chaosGrant{}, pending: map[string]int{}, nodes: map[string]int{},
		deleted: map[string]time.Time{}, deleteDone: map[string]time.Time{}, sessFaults: map[int64]time.Time{}, stuckSince: map[string]time.Time{},
		stuckWorst: map[string]time.Duration{}, stuckTold: map[string]bool{}, overlapWins: map[string][]time.Duration{}, events: map[string][]string{}, byNode: map[string][]*chaosGrant{}}
}

// granted registers a grant made at start and checks it against every
// grant of its domains that reports held.
func (m *chaosMonitor) granted(lk *chaosLock, actor, sess, gen int, leases []*conn.Lease, start time.Time) *chaosGrant {
	g := &chaosGrant{relCh: make(chan struct{}), lock: lk, actor: actor, sess: sess, gen: gen, leases: leases, start: start,
		sid: leases[0].Epoch().SessionID()}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	g.id = m.nextID
	for _, l := range leases {
		m.byNode[l.Path()] = append(m.byNode[l.Path()], g)
		m.nodes[l.Path()]++
		if m.nodes[l.Path()] > 1 {
			g.local = true
		}
	}
	m.grants = append(m.grants, g)
	for _, d := range lk.domains {
		for _, a := range m.active[d] {
			if a.sess == g.sess && a.actor == g.actor {
				continue // an actor's own grants do not overlap (it never holds two of a domain)
			}
			if !conflicting(a, g) || a.lease(d).Err() != nil || g.lease(d).Err() != nil {
				continue
			}
			m.checks.Add(1)
			go m.overlap(d, a, g)
		}
		m.active[d] = append(m.active[d], g)
	}
	return g
}

// releasing marks g released from the start of a Release call on it
// (by anyone): its node may be gone from then on. Every call is ended by
// releaseDone; a grant whose every Release failed is held again.
func (m *chaosMonitor) releasing(g *chaosGrant) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g.releasers++
	if !g.relTime.IsZero() {
		return
	}
	g.relTime = time.Now()
	select {
	case <-g.relCh:
	default:
		close(g.relCh)
	}
	for _, d := range g.lock.domains {
		act := m.active[d]
		for i, a := range act {
			if a == g {
				m.active[d] = append(act[:i:i], act[i+1:]...)
				break
			}
		}
	}
}

// releaseDone ends a Release call on g: done says whether g is over (the
// call succeeded, or the lock says it is no longer held).
func (m *chaosMonitor) releaseDone(g *chaosGrant, done bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g.releasers--
	if done {
		g.over = true
	}
	if g.over || g.releasers > 0 {
		return
	}
	g.relTime = time.Time{}
	for _, d := range g.lock.domains {
		m.active[d] = append(m.active[d], g)
	}
}

// released marks g over (its session was closed, its term ended).
func (m *chaosMonitor) released(g *chaosGrant) {
	m.releasing(g)
	m.releaseDone(g, true)
}

// randomActive returns a random grant that is not released (nil: none).
func (m *chaosMonitor) randomActive(rng *rand.Rand) *chaosGrant {
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []*chaosGrant
	for _, d := range chaosDomains {
		all = append(all, m.active[d]...)
	}
	if len(all) == 0 {
		return nil
	}
	return all[rng.IntN(len(all))]
}

// sessionClosed marks every grant of generation gen of session sess
// released: Close ended them.
func (m *chaosMonitor) sessionClosed(sess, gen int) {
	var gs []*chaosGrant
	m.mu.Lock()
	for _, d := range chaosDomains {
		for _, g := range m.active[d] {
			if g.sess == sess && g.gen == gen {
				gs = append(gs, g)
			}
		}
	}
	m.mu.Unlock()
	for _, g := range gs {
		m.released(g)
	}
}

func (m *chaosMonitor) isReleased(g *chaosGrant) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !g.relTime.IsZero()
}

// Excuses for two grants that both report held, each with the bound on
// how long both may: the documented windows.
const (
	excuseExpiry = "session expiry" // one grant's session was ended on the server (expiry, blackhole): the older's, or the newer's just before it was granted
	excuseDelete = "bystander delete"
)

// overlap measures how long a (older or not) and g both report held, and
// classifies it: the older grant's session was ended on the server by a
// fault (the window the docs name for session expiry), or its node was
// deleted by a bystander (the docs: a delete lets the next waiter in and
// the holder's Lost closes); anything else is two holders.
func (m *chaosMonitor) overlap(d string, a, g *chaosGrant) {
	defer m.checks.Done()
	old, nw := a, g
	if g.start.Before(a.start) {
		old, nw = g, a
	}
	ol, nl := old.lease(d), nw.lease(d)
	bound := m.r.cfg.sessionTimeout
	deadline := time.Now().Add(2 * bound)
	for time.Now().Before(deadline) && ol.Err() == nil && nl.Err() == nil && !m.isReleased(old) && !m.isReleased(nw) {
		time.Sleep(2 * time.Millisecond) // polling Err, which has no channel: not hiding a race
	}
	window := time.Since(nw.start)

	m.mu.Lock()
	excuse, handedDeleted := "", ""
	for _, x := range []*chaosGrant{old, nw} {
		// A bystander deleted the node of one of them before the newer
		// grant: the docs' window (a delete lets the next waiter in, and
		// the holder learns it through Lost; a node deleted while queued
		// is noticed once granted).
		del, ok := m.deleted[x.lease(d).Path()]
		if !ok || !del.Before(nw.start) {
			continue
		}
		if done, ok := m.deleteDone[x.lease(d).Path()]; ok && x.local && done.Before(x.start) {
			// A local handoff of a node whose delete was applied before:
			// a remote Acquire could never have granted it.
			handedDeleted = fmt.Sprintf("; actor %d's grant was handed over locally %v after a bystander's delete of its node was answered",
				x.actor, x.start.Sub(done).Round(time.Millisecond))
			continue
		}
		excuse = excuseDelete
	}
	if handedDeleted != "" {
		excuse = ""
	}
	if sf, ok := m.sessFaults[old.sid]; ok && excuse == "" && handedDeleted == "" && sf.After(old.start.Add(-bound)) && sf.Before(nw.start) {
		excuse = excuseExpiry
	}
	// The newer grant was made in a session the server had just ended (a
	// waiter woken by the deletion of its predecessor, deleted with its own
	// node in the expiry's one transaction, before it hears of the
	// expiry): its holder believes it holds until it hears, the same
	// window (conn's "What it does not guarantee").
	if sf, ok := m.sessFaults[nw.sid]; ok && excuse == "" && handedDeleted == "" && sf.After(nw.start.Add(-bound)) && sf.Before(nw.start) {
		excuse = excuseExpiry
	}
	// A local handoff of a node whose earlier grant had been told it was
	// lost (Lost closed) is never excused: the process knew.
	handedLost := ""
	for _, x := range []*chaosGrant{old, nw} {
		if !x.local {
			continue
		}
		for _, p := range m.byNode[x.lease(d).Path()] {
			if lost := p.lostAt.Load(); p != x && p.start.Before(x.start) && lost != 0 && lost < x.start.UnixNano() && (p.relTime.IsZero() || lost < p.relTime.UnixNano()) {
				handedLost = fmt.Sprintf("; actor %d's grant was handed over locally %v after the earlier grant of its node (actor %d's) was told it was lost",
					x.actor, x.start.Sub(time.Unix(0, lost)).Round(time.Millisecond), p.actor)
				excuse = ""
			}
		}
	}
	// A Revoke through the holder's own session that succeeded.
	ownRevoke := ""
	for _, e := range m.events[ol.Path()] {
		if strings.Contains(e, "its own session's grant): ok") {
			ownRevoke = "; the older node was revoked through its own session"
		}
	}
	m.mu.Unlock()
	desc := fmt.Sprintf("%s: %s (actor %d, session %d/0x%x, node %s, granted %s%s) and %s (actor %d, session %d/0x%x, node %s, granted %s%s) both reported held for %v",
		d, old.lock.name, old.actor, old.sess, old.sid, ol.Path(), stamp(old.start), localTag(old),
		nw.lock.name, nw.actor, nw.sess, nw.sid, nl.Path(), stamp(nw.start), localTag(nw), window.Round(time.Millisecond))
	desc += handedDeleted + handedLost + ownRevoke + fmt.Sprintf("; events on the older node: %s; on the newer: %s", m.history(ol.Path()), m.history(nl.Path()))
	if excuse == "" {
		m.r.violate("two holders: %s", desc)
		return
	}
	m.mu.Lock()
	m.overlapWins[excuse] = append(m.overlapWins[excuse], window)
	m.mu.Unlock()
	if window > bound {
		m.r.violate("two holders for longer than the %s window (%v): %s", excuse, bound, desc)
		return
	}
	m.r.t.Logf("chaos run: within the %s window: %s", excuse, desc)
}

func localTag(g *chaosGrant) string {
	if g.local {
		return ", a local handoff"
	}
	return ""
}

// waiting counts a blocking acquire of lk's domains under way (+1 at its
// start, -1 at its end).
func (m *chaosMonitor) waiting(lk *chaosLock, delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range lk.domains {
		m.pending[d] += delta
	}
}

func (m *chaosMonitor) bystanderDeleted(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.deleted[node]; !ok { // the first delete is the one that counts
		m.deleted[node] = time.Now()
	}
}

// bystanderDeleteDone: the bystander's delete of node was answered (it
// was applied before).
func (m *chaosMonitor) bystanderDeleteDone(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.deleteDone[node]; !ok {
		m.deleteDone[node] = time.Now()
	}
}

// event records what happened to a lock node, for the description of a
// violation.
func (m *chaosMonitor) event(node, format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[node] = append(m.events[node], stamp(time.Now())+" "+fmt.Sprintf(format, args...))
}

func (m *chaosMonitor) history(node string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events[node]) == 0 {
		return "none"
	}
	return strings.Join(m.events[node], "; ")
}

func (m *chaosMonitor) sessionFault(sid int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessFaults[sid] = time.Now()
}

// watchStuck samples, until stop closes, every domain: one where
// acquires wait and no grant reports held for longer than the stuck bound
// is a stuck lock (a node nobody holds in the queue: a ghost contender).
func (m *chaosMonitor) watchStuck(stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		m.mu.Lock()
		for _, d := range chaosDomains {
			held := false
			for _, a := range m.active[d] {
				if a.lease(d).Err() == nil {
					held = true
					break
				}
			}
			if held || m.pending[d] == 0 {
				delete(m.stuckSince, d)
				m.stuckTold[d] = false
				continue
			}
			since, ok := m.stuckSince[d]
			if !ok {
				m.stuckSince[d] = now
				continue
			}
			stuck := now.Sub(since)
			m.stuckWorst[d] = max(m.stuckWorst[d], stuck)
			if stuck > m.r.cfg.stuckBound && !m.stuckTold[d] {
				m.stuckTold[d] = true
				m.mu.Unlock()
				m.r.loud("%s: stuck: no grant reports held for %v while acquires wait (since %s; bound %v); %s",
					d, stuck.Round(time.Millisecond), stamp(since), m.r.cfg.stuckBound, m.r.describeQueue(d))
				m.mu.Lock()
			}
		}
		m.mu.Unlock()
	}
}

// describeQueue says, for a stuck lock, what heads its queue: the first
// node by sequence number, its session, and whether a grant holds it.
func (r *chaosRun) describeQueue(d string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	zc, err := bystanderClient(ctx, r.c.Servers())
	if err != nil {
		return "queue unknown: " + err.Error()
	}
	defer zc.Close()
	dir := chaosLockPaths(r.lockRoot)[d]
	if d == domSemMutex {
		dir += "/locks"
	}
	kids, _, err := zc.Children(dir)
	if err != nil || len(kids) == 0 {
		return fmt.Sprintf("queue %s: %v (%v)", dir, kids, err)
	}
	sort.Slice(kids, func(i, j int) bool { return seqOf(kids[i]) < seqOf(kids[j]) })
	head := dir + "/" + kids[0]
	_, st, err := zc.Exists(head)
	if err != nil || st == nil {
		return fmt.Sprintf("queue head %s: %v", head, err)
	}
	r.mon.mu.Lock()
	grants := len(r.mon.byNode[head])
	r.mon.mu.Unlock()
	return fmt.Sprintf("queue of %d, head %s of session 0x%x, created %s, granted %d times (0: a node no Acquire returned: a ghost contender)",
		len(kids), head, st.EphemeralOwner, time.UnixMilli(st.Ctime).Format("15:04:05.000"), grants)
}

// seqOf is the sequence number at the end of a sequential node's name.
func seqOf(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

// disturbed: a bystander deleted the node, or a Revoke of it succeeded
// (the node's end did not come from its session).
func (m *chaosMonitor) disturbed(node string) bool {
	for _, e := range m.events[node] {
		if strings.Contains(e, "deleted by the bystander: ok") || strings.Contains(e, "grant): ok") {
			return true
		}
	}
	return false
}

// timerMargin is the worst local-timer margin of the run: for each grant
// whose epoch the local timer ended while it was held (cut off: a
// blackhole, a paused or lost server) and whose node nobody deleted or
// revoked, the time from the end its holder saw to the next grant of its
// domain by another session (negative: the next holder came first). An
// expiry the server was told to make (zktest.ExpireEpoch) or a Close is
// no timer's doing: its window is the session expiry window's. n is how
// many such handovers there were.
func (m *chaosMonitor) timerMargin() (worst time.Duration, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	worst = time.Duration(math.MaxInt64)
	for _, d := range chaosDomains {
		var gs []*chaosGrant
		for _, g := range m.grants {
			if g.lease(d) != nil {
				gs = append(gs, g)
			}
		}
		sort.Slice(gs, func(i, j int) bool { return gs[i].start.Before(gs[j].start) })
		for i, g := range gs {
			end := g.ended.Load()
			if end == 0 || !g.byTimer.Load() || (!g.relTime.IsZero() && g.relTime.UnixNano() < end) || m.disturbed(g.lease(d).Path()) {
				continue
			}
			for _, h := range gs[i+1:] {
				if h.sid != g.sid && conflicting(g, h) {
					worst = min(worst, h.start.Sub(time.Unix(0, end)))
					n++
					break
				}
			}
		}
	}
	return worst, n
}

// A register operation, as recorded for Porcupine: a read-modify-write
// (read then written read+1) or a read, on the znode register or the
// fenced store of a domain.
type regInput struct {
	store  string // "znode" or "fence"
	domain string
	rmw    bool
	read   int64
	fence  string
}

type regStatus int

const (
	regOK regStatus = iota
	regUnknown
)

type regOp struct {
	in     regInput
	status regStatus
	actor  int
	call   time.Time
	ret    time.Time
}

// registerModel: the state is the register's value. A read-modify-write
// that is known to have been applied must read the state; one whose fate
// is unknown may or may not have been applied; a read must read the state.
var registerModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{int64(0)} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, st := state.(int64), input.(regInput), output.(regStatus)
		switch {
		case !in.rmw:
			if s == in.read {
				return []interface{}{s}
			}
			return nil
		case st == regUnknown:
			if s == in.read {
				return []interface{}{s, s + 1}
			}
			return []interface{}{s}
		case s == in.read:
			return []interface{}{s + 1}
		}
		return nil
	},
	DescribeOperation: func(input, output interface{}) string {
		in, st := input.(regInput), output.(regStatus)
		what := fmt.Sprintf("read %d", in.read)
		if in.rmw {
			what = fmt.Sprintf("read %d, write %d", in.read, in.read+1)
		}
		if in.fence != "" {
			what += " fence " + in.fence
		}
		if st == regUnknown {
			what += " (unknown)"
		}
		return what
	},
	DescribeState: func(state interface{}) string { return fmt.Sprint(state.(int64)) },
}

// checkHistory checks the recorded operations of every register with
// Porcupine; a history that is not linearizable fails the run and is
// written as Porcupine's visualization, whose path is logged. It returns
// the verdict per register.
func (r *chaosRun) checkHistory() map[string]porcupine.CheckResult {
	r.histMu.Lock()
	ops := append([]regOp(nil), r.history...)
	r.histMu.Unlock()
	byReg := map[string][]porcupine.Operation{}
	for _, op := range ops {
		ret := op.ret.Sub(r.begin).Nanoseconds()
		if op.status == regUnknown {
			ret = math.MaxInt64 / 2 // it may take effect at any time after its call
		}
		key := op.in.store + "/" + op.in.domain
		byReg[key] = append(byReg[key], porcupine.Operation{ClientId: op.actor, Input: op.in, Output: op.status,
			Call: op.call.Sub(r.begin).Nanoseconds(), Return: ret})
	}
	model := registerModel.ToModel()
	out := map[string]porcupine.CheckResult{}
	for _, key := range sortedKeys(byReg) {
		res, info := porcupine.CheckOperationsVerbose(model, byReg[key], r.cfg.porcupineTimeout)
		out[key] = res
		switch res {
		case porcupine.Illegal:
			path := filepath.Join(os.TempDir(), fmt.Sprintf("zkrecipes-chaos-seed%d-%s.html", r.cfg.seed, sanitize(key)))
			if err := porcupine.VisualizePath(model, info, path); err != nil {
				r.t.Errorf("chaos run: writing the visualization to %s: %v", path, err)
			}
			r.loud("register %s: the history of %d operations is not linearizable (seed %d); Porcupine's visualization: %s",
				key, len(byReg[key]), r.cfg.seed, path)
		case porcupine.Unknown:
			r.t.Logf("chaos run: register %s: Porcupine gave no verdict within %v (%d operations)", key, r.cfg.porcupineTimeout, len(byReg[key]))
		}
	}
	return out
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '/' {
			b[i] = '-'
		}
	}
	return string(b)
}

// fencedStore is a resource outside ZooKeeper: a value that keeps the
// greatest fencing token it has seen and refuses any operation with a
// lower one (Fence.Compare).
type fencedStore struct {
	mu    sync.Mutex
	max   conn.Fence
	value int64
}

func (s *fencedStore) admit(f conn.Fence) bool {
	if f.Compare(s.max) < 0 {
		return false
	}
	s.max = f
	return true
}

func (s *fencedStore) read(f conn.Fence) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value, s.admit(f)
}

func (s *fencedStore) write(f conn.Fence, v int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admit(f) {
		return false
	}
	s.value = v
	return true
}
