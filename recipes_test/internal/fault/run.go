package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// faultConfig is one fault run's parameters.
type faultConfig struct {
	seed           uint64
	duration       time.Duration // of the fault phase
	clients        int
	sessionTimeout time.Duration // of every client's session
	liveness       time.Duration // bound on each acquire once the faults stopped
}

// faultRun is one run: a fault phase, a liveness phase, then the checks.
type faultRun struct {
	t        *testing.T
	cfg      faultConfig
	c        *zktest.Cluster
	lockRoot string // every lock of the run lives under it
	dataRoot string // counters and ledgers, written only by guarded writes
	admin    *conn.Session
	clients  []*faultClient

	watchers sync.WaitGroup // one per grant, waiting for its lost signal

	mu        sync.Mutex // guards the fields below
	stats     runStats
	intervals []*interval
	writes    []*writeRec
	expired   map[int64]time.Time // session id -> when ExpireSession was called on it
	over      bool                // the fault phase is over (acquisitions count apart)

	thirdParty []thirdPartyRec // third-party writes that reached a holder's node
}

// thirdPartyRec is a third-party write into the lock node of hold, sent
// at at. The node existed then and exists until the holder releases it
// (after hold.release) or its session ends (after a forced expiry, or
// around hold.ended), so no other grant of the domain may start in
// between.
type thirdPartyRec struct {
	hold *interval
	at   time.Time
}

// interval is one hold. start, release and the fields before are set by
// the holding client; lost by the grant's watcher (read only after
// watchers.Wait).
type interval struct {
	client  int
	recipe  string
	domain  string
	mode    holdMode
	session int64     // the ZooKeeper session the grant belongs to
	node    string    // the grant's (first) lock node
	start   time.Time // Acquire returned
	release time.Time // Release is about to be called
	lost    time.Time // the grant's lost signal fired (zero: never seen)
	ended   time.Time // the grant's epoch ended (its session expired, was lost or closed)

	lostFirst bool // the lost signal had fired when Release was called

	// expired is when the fault schedule force-expired the grant's
	// session (zero: it did not); set by verify.
	expired time.Time
}

// end is when the hold ended: at the release, or earlier when the holder
// was told the lock was lost, or when its session was force-expired.
//
// A forced expiry (zktest.ExpireSession, as an operator's kill would do)
// ends the session on the server before its owner can know: the owner
// learns it on its next reconnect, a few milliseconds after a waiter may
// already have been granted the lock (measured: 1–11 ms, up to a second
// when the reconnect backs off). No client can close that window; what
// closes it is the guarded write, checked against the ledgers. So the hold
// ends at the expiry, and overlaps that only the expiry explains are
// counted apart (strictEnd), not as violations.
func (iv *interval) end() time.Time {
	e := iv.strictEnd()
	if !iv.expired.IsZero() && iv.expired.Before(e) {
		e = later(iv.expired, iv.start)
	}
	return e
}

// strictEnd is the end by the holder's own signals only: the release, or
// the lost signal if it came first.
func (iv *interval) strictEnd() time.Time {
	e := iv.release
	if !iv.lost.IsZero() && iv.lost.Before(e) {
		e = iv.lost
	}
	return later(e, iv.start)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// writeRec is one guarded write (or, for readers, one guarded check).
type writeRec struct {
	client  int
	recipe  string
	domain  string
	check   bool   // a reader's version check, not a write
	ledger  string // the ledger node the write creates
	start   time.Time
	outcome outcome
	err     error
	hold    *interval
}

// runStats are the figures of one run (or, summed, of several).
type runStats struct {
	runs            int
	duration        time.Duration
	faults          map[string]int // applied, per kind
	faultsSkipped   int
	notApplied      map[string]int // per kind
	acquisitions    map[string]int // per recipe, liveness phase included
	underFaults     map[string]int // per recipe, during the fault phase
	localHandoffs   map[string]int // per paired recipe: grants on a node granted before (checkNodes)
	acquireTimeouts int
	acquireStopped  int
	acquireErrors   map[string]int // unexpected ones (see acquireFailed), by recipe and error
	holdsLost       int            // holds whose lost signal fired before their release
	expiryOverlaps  int            // overlaps by the holders' own signals that a forced expiry explains
	writes          [4]int
	checks          [4]int
	releasePending  int
	releaseFailed   int
	liveness        map[string]time.Duration // slowest acquire per recipe once faults stopped
	violations      []string

	// Third-party writes into a holder's node that reached it: accepted
	// (the node was writable by anyone) or refused with zk.ErrNoAuth.
	thirdPartyAccepted int
	thirdPartyRefused  int
}

func newRunStats() runStats {
	return runStats{faults: map[string]int{}, notApplied: map[string]int{}, acquisitions: map[string]int{},
		underFaults: map[string]int{}, localHandoffs: map[string]int{}, acquireErrors: map[string]int{},
		liveness: map[string]time.Duration{}}
}

func (s *runStats) add(o runStats) {
	s.runs += o.runs
	s.duration += o.duration
	for k, v := range o.faults {
		s.faults[k] += v
	}
	s.faultsSkipped += o.faultsSkipped
	for k, v := range o.notApplied {
		s.notApplied[k] += v
	}
	for k, v := range o.acquisitions {
		s.acquisitions[k] += v
	}
	for k, v := range o.underFaults {
		s.underFaults[k] += v
	}
	for k, v := range o.localHandoffs {
		s.localHandoffs[k] += v
	}
	s.thirdPartyAccepted += o.thirdPartyAccepted
	s.thirdPartyRefused += o.thirdPartyRefused
	s.acquireTimeouts += o.acquireTimeouts
	s.acquireStopped += o.acquireStopped
	for k, v := range o.acquireErrors {
		s.acquireErrors[k] += v
	}
	s.holdsLost += o.holdsLost
	s.expiryOverlaps += o.expiryOverlaps
	for i := range s.writes {
		s.writes[i] += o.writes[i]
		s.checks[i] += o.checks[i]
	}
	s.releasePending += o.releasePending
	s.releaseFailed += o.releaseFailed
	for k, v := range o.liveness {
		s.liveness[k] = max(s.liveness[k], v)
	}
	s.violations = append(s.violations, o.violations...)
}

// log writes the summary.
func (s *runStats) log(t *testing.T, seed uint64) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "fault run summary (seed %d): %d run(s), %v of faults\n", seed, s.runs, s.duration.Round(time.Second))
	total := 0
	for _, k := range faultKinds {
		total += s.faults[k]
	}
	fmt.Fprintf(&b, "  faults injected: %d (%d could not be applied)\n", total, s.faultsSkipped)
	for _, k := range faultKinds {
		fmt.Fprintf(&b, "    %-36s applied %3d, not applied %3d\n", k, s.faults[k], s.notApplied[k])
	}
	fmt.Fprintf(&b, "  third-party writes into a holder's node: accepted %d, refused with NoAuth %d\n",
		s.thirdPartyAccepted, s.thirdPartyRefused)
	acq := 0
	for _, r := range faultRecipes {
		acq += s.acquisitions[r.name]
	}
	fmt.Fprintf(&b, "  acquisitions: %d (timeouts under faults %d, cancelled at the end %d, unexpected errors %d)\n",
		acq, s.acquireTimeouts, s.acquireStopped, sumValues(s.acquireErrors))
	for _, r := range faultRecipes {
		fmt.Fprintf(&b, "    %-15s %6d (under faults %6d)   slowest once faults stopped: %v", r.name, s.acquisitions[r.name],
			s.underFaults[r.name], s.liveness[r.name].Round(time.Millisecond))
		if r.paired {
			fmt.Fprintf(&b, "   local handoffs: %d", s.localHandoffs[r.name])
		}
		b.WriteString("\n")
	}
	for _, k := range sortedKeys(s.acquireErrors) {
		fmt.Fprintf(&b, "    unexpected acquire error x%d: %s\n", s.acquireErrors[k], k)
	}
	fmt.Fprintf(&b, "  holds told lost before their release: %d\n", s.holdsLost)
	fmt.Fprintf(&b, "  overlaps only a forced expiry explains (granted before the expired holder could know): %d\n", s.expiryOverlaps)
	fmt.Fprintf(&b, "  guarded writes: ok %d, rejected (lock lost) %d, unknown (connection lost) %d, other errors %d\n",
		s.writes[outOK], s.writes[outRejected], s.writes[outUnknown], s.writes[outOther])
	fmt.Fprintf(&b, "  guarded read checks: ok %d, rejected (lock lost) %d, unknown %d, other errors %d\n",
		s.checks[outOK], s.checks[outRejected], s.checks[outUnknown], s.checks[outOther])
	fmt.Fprintf(&b, "  releases pending in the background: %d, failed: %d\n", s.releasePending, s.releaseFailed)
	fmt.Fprintf(&b, "  violations: %d", len(s.violations))
	t.Log(b.String())
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// runFaults makes one run on c and returns its figures. Violations have
// failed t already.
func runFaults(t *testing.T, c *zktest.Cluster, cfg faultConfig, tag string) runStats {
	r := newFaultRun(t, c, cfg, tag)
	begin := time.Now()

	stop, cancel := context.WithCancel(context.Background())
	var clients sync.WaitGroup
	stopClients := sync.OnceFunc(func() {
		cancel()
		clients.Wait()
	})
	t.Cleanup(stopClients) // on a failure midway
	for _, cl := range r.clients {
		clients.Add(1)
		go func() {
			defer clients.Done()
			cl.loop(stop)
		}()
	}
	r.schedule(rand.New(rand.NewPCG(cfg.seed, 0)), begin.Add(cfg.duration))
	stopClients()
	r.mu.Lock()
	r.over = true
	r.mu.Unlock()
	r.stats.duration = time.Since(begin)
	t.Logf("fault run: faults stopped after %v; liveness phase", r.stats.duration.Round(time.Second))

	r.liveness()
	r.closeClients()
	r.watchers.Wait()
	r.verify()
	r.deleteData()
	r.hygiene()
	r.stats.runs = 1
	r.requireFigures()
	return r.stats
}

// newFaultRun connects the admin session and the clients and makes the
// counters and ledgers.
func newFaultRun(t *testing.T, c *zktest.Cluster, cfg faultConfig, tag string) *faultRun {
	r := &faultRun{t: t, cfg: cfg, c: c, stats: newRunStats(), expired: map[int64]time.Time{},
		lockRoot: c.Root() + "/faultrun-" + tag, dataRoot: c.Root() + "/faultdata-" + tag}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	admin, err := conn.Connect(ctx, c.Servers(), conn.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("fault run: admin session: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	r.admin = admin
	if err := r.makeData(ctx); err != nil {
		t.Fatalf("fault run: making counters and ledgers under %s: %v", r.dataRoot, err)
	}

	r.clients = make([]*faultClient, cfg.clients)
	errs := make([]error, cfg.clients)
	var wg sync.WaitGroup
	for i := range r.clients {
		proxy := zktest.NewProxy(t, c.Servers())
		cl := &faultClient{id: i, run: r, proxy: proxy, rng: rand.New(rand.NewPCG(cfg.seed, uint64(i)+1))}
		tw := cfg.clients + i
		cl.twin = &faultClient{id: tw, run: r, proxy: proxy, rng: rand.New(rand.NewPCG(cfg.seed, uint64(tw)+1))}
		r.clients[i] = cl
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.sess, errs[i] = conn.Connect(ctx, proxy.Addrs(), conn.WithSessionTimeout(cfg.sessionTimeout))
		}()
	}
	wg.Wait()
	for i, cl := range r.clients {
		if cl.sess != nil {
			t.Cleanup(func() { cl.sess.Close() })
		}
		if errs[i] != nil {
			t.Fatalf("fault run: client %d: connect: %v", i, errs[i])
		}
		cl.twin.sess = cl.sess
		for _, g := range []*faultClient{cl, cl.twin} {
			if g.recipes, err = openRecipes(g.sess, r.lockRoot, g.id); err != nil {
				t.Fatalf("fault run: client %d: %v", g.id, err)
			}
		}
	}
	return r
}

func (r *faultRun) counterPath(domain string) string { return r.dataRoot + "/counter-" + domain }
func (r *faultRun) ledgerPath(domain string) string  { return r.dataRoot + "/ledger-" + domain }

// makeData creates, as persistent nodes, the data root, a counter "0" and
// an empty ledger per domain.
func (r *faultRun) makeData(ctx context.Context) error {
	ep, err := connlink.Of(r.admin).Epoch(ctx)
	if err != nil {
		return err
	}
	if err := connlink.Of(ep).CreateParents(ctx, r.dataRoot); err != nil {
		return err
	}
	world := zk.WorldACL(zk.PermAll)
	if _, err := r.admin.Create(ctx, r.dataRoot, nil, 0, world); err != nil {
		return err
	}
	for _, d := range faultDomains() {
		if _, err := r.admin.Create(ctx, r.counterPath(d), []byte("0"), 0, world); err != nil {
			return err
		}
		if _, err := r.admin.Create(ctx, r.ledgerPath(d), nil, 0, world); err != nil {
			return err
		}
	}
	return nil
}

// count adds one to a field of r.stats.
func (r *faultRun) count(field *int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*field++
}

func (r *faultRun) countFault(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.faults[kind]++
}

// violate records a broken guarantee and fails the test.
func (r *faultRun) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.stats.violations = append(r.stats.violations, msg)
	n := len(r.stats.violations)
	r.mu.Unlock()
	if n <= 25 {
		r.t.Errorf("fault run: VIOLATION: %s", msg)
	}
}

func (r *faultRun) acquired(client int, rec faultRecipe, g *grant) *interval {
	iv := &interval{client: client, recipe: rec.name, domain: rec.domain, mode: rec.mode,
		session: g.leases[0].Epoch().SessionID(), node: g.leases[0].Path(), start: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.acquisitions[rec.name]++
	if !r.over {
		r.stats.underFaults[rec.name]++
	}
	r.intervals = append(r.intervals, iv)
	return iv
}

// watchLost records when the grant's lost signal fires (it closes at the
// latest when the grant is released or its session ends) and when the
// grant's epoch ends (at the latest when its session is closed).
func (r *faultRun) watchLost(iv *interval, lost <-chan struct{}, epoch <-chan struct{}) {
	r.watchers.Add(2)
	go func() {
		defer r.watchers.Done()
		<-lost
		iv.lost = time.Now()
	}()
	go func() {
		defer r.watchers.Done()
		<-epoch // closed when the session ends at the latest
		iv.ended = time.Now()
	}()
}

func (r *faultRun) acquireFailed(client int, rec faultRecipe, err error, stopped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case stopped:
		r.stats.acquireStopped++
	case errors.Is(err, context.DeadlineExceeded):
		r.stats.acquireTimeouts++
	default:
		key := fmt.Sprintf("%s: %v", rec.name, err)
		if r.stats.acquireErrors[key] == 0 {
			r.t.Logf("fault run: client %d: acquire %s: unexpected error (fails the run): %v", client, rec.name, err)
		}
		r.stats.acquireErrors[key]++
	}
}

func (r *faultRun) releaseFailed(client int, rec faultRecipe, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.releaseFailed++
	r.t.Logf("fault run: client %d: release %s: %v", client, rec.name, err)
}

func (r *faultRun) recordWrite(w *writeRec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, w)
}

// liveness: once the faults have stopped, every client acquires (and
// releases) every recipe within the bound.
func (r *faultRun) liveness() {
	var wg sync.WaitGroup
	for _, cl := range r.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := cl.rng.Perm(len(faultRecipes))
			for _, i := range order {
				rec := faultRecipes[i]
				begin := time.Now()
				err := cl.turn(context.Background(), rec, r.cfg.liveness)
				took := time.Since(begin)
				if err != nil {
					r.violate("liveness: client %d could not acquire %s within %v after the faults stopped: %v",
						cl.id, rec.name, r.cfg.liveness, err)
					continue
				}
				r.mu.Lock()
				r.stats.liveness[rec.name] = max(r.stats.liveness[rec.name], took)
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// closeClients closes every client's session, at once.
func (r *faultRun) closeClients() {
	var wg sync.WaitGroup
	for _, cl := range r.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.sess.Close()
		}()
	}
	wg.Wait()
}

// The acquire errors a fault run expects; any other fails it
// (acquireFailed):
//
//   - context.DeadlineExceeded: an acquire is bounded (faultAcquireTimeout
//     under faults, faultConfig.liveness after), and a waiter behind a
//     holder that is cut off, paused or killed may wait out the holder's
//     session timeout and its reconnect, or its turn in a long queue.
//   - the fault phase ending (stopped): the client loops' context is
//     cancelled, which ends the acquires under way.
//
// A session that expires, a lost connection or a killed server are not
// among them: an acquire starts over in the next epoch, and only its
// deadline ends it.

// Minimum figures of a run, so that a run whose faults do not apply or
// whose clients do not get their locks cannot pass. Per fault kind: at
// least one applied per full minute of faults (at least one), and at least
// as many applied as not applied. Per recipe: at least
// minAcquisitionsPerMinute acquisitions under faults per minute of faults
// (the default 90 s run makes hundreds per recipe). Per paired recipe: at
// least minLocalHandoffsPerMinute local handoffs per minute of faults.
const (
	minAcquisitionsPerMinute  = 20
	minLocalHandoffsPerMinute = 5
)

// requireFigures fails the run below the minimum figures.
func (r *faultRun) requireFigures() {
	for _, p := range figureProblems(r.cfg.duration, r.stats) {
		r.t.Errorf("fault run: %s", p)
	}
}

// figureProblems says where the figures s of a run whose faults lasted
// duration fall below the minimums. Pure, for table tests.
func figureProblems(duration time.Duration, s runStats) []string {
	minutes := int(duration / time.Minute)
	minFaults := max(1, minutes)
	minAcq := max(minAcquisitionsPerMinute, minAcquisitionsPerMinute*minutes)
	var out []string
	for _, k := range faultKinds {
		applied, missed := s.faults[k], s.notApplied[k]
		if applied < minFaults || applied < missed {
			out = append(out, fmt.Sprintf("fault %s applied %d times, not applied %d times: want at least %d, and at least as many as not applied",
				k, applied, missed, minFaults))
		}
	}
	minLocal := max(minLocalHandoffsPerMinute, minLocalHandoffsPerMinute*minutes)
	for _, rec := range faultRecipes {
		if n := s.underFaults[rec.name]; n < minAcq {
			out = append(out, fmt.Sprintf("%s acquired %d times under faults: want at least %d", rec.name, n, minAcq))
		}
		if n := s.localHandoffs[rec.name]; rec.paired && n < minLocal {
			out = append(out, fmt.Sprintf("%s handed over in the process %d times: want at least %d", rec.name, n, minLocal))
		}
	}
	for _, k := range sortedKeys(s.acquireErrors) {
		out = append(out, fmt.Sprintf("unexpected acquire error x%d: %s", s.acquireErrors[k], k))
	}
	return out
}
