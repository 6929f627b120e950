package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Environment of the chaos run.
const (
	envChaosSeed        = "ZKRECIPES_CHAOS_SEED"         // the run's seed (decimal)
	envChaosDuration    = "ZKRECIPES_CHAOS_DURATION"     // how long the actors and faults run (Go duration)
	envChaosWeights     = "ZKRECIPES_CHAOS_WEIGHTS"      // op weights, e.g. "revoke=300,close=0" (see chaosOpWeights)
	envChaosFaults      = "ZKRECIPES_CHAOS_FAULTS"       // the fault kinds, comma-separated ("none": no fault); default all
	envChaosStuck       = "ZKRECIPES_CHAOS_STUCK"        // the stuck-lock bound (Go duration)
	envChaosNoBystander = "ZKRECIPES_CHAOS_NO_BYSTANDER" // "1": no bystander
	envChaosLocks       = "ZKRECIPES_CHAOS_LOCKS"        // the locks actors acquire, comma-separated (see chaosLocks); default all
)

const (
	defaultChaosSeed     = 20261124
	defaultChaosDuration = 2 * time.Minute // CI: about 3 minutes of wall time in all
)

// faultGhost is the chaos run's own fault: the answer to a create of a
// session with a bounded retry policy is lost (the connection goes dark
// right after it is written), and the connection goes dark again just as
// it comes back.
const faultGhost = "lost-create-answer-twice"

// chaosFaultKinds: the fault run's catalogue (its third-party write is
// the chaos run's bystander, which runs all the time), and faultGhost.
var chaosFaultKinds = []string{faultLeaderKill, faultFollowerKill, faultPause, faultBlackholeLong,
	faultBlackholeShort, faultExpire, faultCut, faultGhost}

type chaosConfig struct {
	seed             uint64
	duration         time.Duration
	sessions         int // of actors each, plus one of a single actor with conn.WithRetry(20ms, 1s, 1)
	actors           int // per session
	sessionTimeout   time.Duration
	stuckBound       time.Duration
	porcupineTimeout time.Duration
	weights          map[string]int
	faults           []string
	locks            map[string]bool // the locks actors acquire
}

func defaultChaosConfig() chaosConfig {
	w := map[string]int{}
	for k, v := range chaosOpWeights {
		w[k] = v
	}
	return chaosConfig{seed: defaultChaosSeed, duration: defaultChaosDuration, sessions: 3, actors: 3,
		sessionTimeout: 4 * time.Second, stuckBound: 20 * time.Second, porcupineTimeout: time.Minute,
		weights: w, faults: chaosFaultKinds, locks: map[string]bool{}}
}

// Chaos is TestChaos's run on c (three servers), its configuration from
// the environment (ZKRECIPES_CHAOS_*).
func Chaos(t *testing.T, c *zktest.Cluster) {
	cfg := chaosConfigFromEnv(t)
	t.Logf("chaos run: seed %d for %v, %d sessions of %d actors and one of one, session timeout %v (replay: %s=%d %s=%v go test -race -run '^TestChaos$' ./recipes_test/)",
		cfg.seed, cfg.duration, cfg.sessions, cfg.actors, cfg.sessionTimeout, envChaosSeed, cfg.seed, envChaosDuration, cfg.duration)
	newChaosRun(t, c, cfg).run()
}

func chaosConfigFromEnv(t *testing.T) chaosConfig {
	cfg := defaultChaosConfig()
	if v := os.Getenv(envChaosSeed); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a decimal number: %v", envChaosSeed, v, err)
		}
		cfg.seed = seed
	}
	for env, d := range map[string]*time.Duration{envChaosDuration: &cfg.duration, envChaosStuck: &cfg.stuckBound} {
		if v := os.Getenv(env); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x <= 0 {
				t.Fatalf("%s=%q: want a positive Go duration such as 2m (%v)", env, v, err)
			}
			*d = x
		}
	}
	if v := os.Getenv(envChaosWeights); v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, n, ok := strings.Cut(strings.TrimSpace(kv), "=")
			w, err := strconv.Atoi(n)
			if _, known := cfg.weights[k]; !ok || !known || err != nil || w < 0 {
				t.Fatalf("%s: %q: want op=weight, op one of %v", envChaosWeights, kv, chaosOpNames)
			}
			cfg.weights[k] = w
		}
	}
	for _, l := range chaosLocks {
		cfg.locks[l.name] = true
	}
	if v := os.Getenv(envChaosLocks); v != "" {
		cfg.locks = map[string]bool{}
		for _, k := range strings.Split(v, ",") {
			k = strings.TrimSpace(k)
			found := false
			for _, l := range chaosLocks {
				found = found || l.name == k
			}
			if !found {
				t.Fatalf("%s: unknown lock %q", envChaosLocks, k)
			}
			cfg.locks[k] = true
		}
	}
	if v := os.Getenv(envChaosFaults); v != "" {
		cfg.faults = nil
		for _, k := range strings.Split(v, ",") {
			k = strings.TrimSpace(k)
			if k == "none" {
				continue
			}
			found := false
			for _, known := range chaosFaultKinds {
				found = found || k == known
			}
			if !found {
				t.Fatalf("%s: unknown fault kind %q (known: %v, or none)", envChaosFaults, k, chaosFaultKinds)
			}
			cfg.faults = append(cfg.faults, k)
		}
	}
	return cfg
}

// chaosRun is one chaos run.
type chaosRun struct {
	t        *testing.T
	cfg      chaosConfig
	c        *zktest.Cluster
	lockRoot string
	dataRoot string
	begin    time.Time
	sessions []*chaosSession
	actors   []*chaosActor
	mon      *chaosMonitor
	stores   map[string]*fencedStore

	watchers   sync.WaitGroup // one per grant, until its Lost closes
	faultsBusy sync.WaitGroup // fault sequences still running

	histMu  sync.Mutex
	history []regOp

	mu         sync.Mutex
	counts     map[string]int
	faults     map[string]int
	notApplied map[string]int
	violations []string
}

func newChaosRun(t *testing.T, c *zktest.Cluster, cfg chaosConfig) *chaosRun {
	tag := strconv.FormatUint(cfg.seed, 10)
	r := &chaosRun{t: t, cfg: cfg, c: c, lockRoot: c.Root() + "/chaos-" + tag, dataRoot: c.Root() + "/chaosdata-" + tag,
		stores: map[string]*fencedStore{}, counts: map[string]int{}, faults: map[string]int{}, notApplied: map[string]int{}}
	r.mon = newChaosMonitor(r)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := conn.Connect(ctx, c.Servers(), conn.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("chaos run: admin session: %v", err)
	}
	defer admin.Close()
	ep, err := connlink.Of(admin).Epoch(ctx)
	if err == nil {
		err = connlink.Of(ep).CreateParents(ctx, r.dataRoot+"/x")
	}
	for _, d := range chaosDomains {
		r.stores[d] = &fencedStore{}
		if err == nil {
			_, err = admin.Create(ctx, r.registerPath(d), []byte("0"), 0, zk.WorldACL(zk.PermAll))
		}
	}
	if err != nil {
		t.Fatalf("chaos run: making the registers under %s: %v", r.dataRoot, err)
	}
	for i := 0; i <= cfg.sessions; i++ {
		// The last session has one actor and a retry policy of one
		// attempt: the lost create answers of faultGhost are its own
		// create's, not another goroutine's request.
		s := &chaosSession{idx: i, proxy: zktest.NewProxy(t, c.Servers()), retry1: i == cfg.sessions}
		if s.sess, err = r.connect(ctx, s); err != nil {
			t.Fatalf("chaos run: session %d: %v", i, err)
		}
		r.sessions = append(r.sessions, s)
		for j := 0; j < cfg.actors && (!s.retry1 || j == 0); j++ {
			id := len(r.actors)
			r.actors = append(r.actors, &chaosActor{id: id, r: r, s: s, rng: rand.New(rand.NewPCG(cfg.seed, uint64(id)+1))})
		}
	}
	t.Cleanup(func() {
		for _, s := range r.sessions {
			s.mu.Lock()
			s.sess.Close()
			s.mu.Unlock()
		}
	})
	return r
}

func (r *chaosRun) registerPath(domain string) string { return r.dataRoot + "/register-" + domain }

func (r *chaosRun) connect(ctx context.Context, s *chaosSession) (*conn.Session, error) {
	opts := []conn.Option{conn.WithSessionTimeout(r.cfg.sessionTimeout)}
	if s.retry1 {
		opts = append(opts, conn.WithRetry(20*time.Millisecond, time.Second, 1))
	}
	return conn.Connect(ctx, s.proxy.Addrs(), opts...)
}

// reopenSession closes s's session and opens a new one for its actors.
func (r *chaosRun) reopenSession(stop context.Context, s *chaosSession) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.closing = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(stop, 30*time.Second)
	defer cancel()
	sess, err := r.connect(ctx, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = false
	if err != nil {
		r.count("close: new session: " + errClass(err))
		return
	}
	old, gen := s.sess, s.gen
	s.sess, s.gen = sess, s.gen+1
	r.mon.sessionClosed(s.idx, gen)
	err = old.Close()
	r.count("close: " + errClass(err))
}

func (r *chaosRun) count(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[key]++
}

func (r *chaosRun) countFault(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[kind]++
}

func (r *chaosRun) record(op regOp) {
	r.histMu.Lock()
	defer r.histMu.Unlock()
	r.history = append(r.history, op)
}

// violate records a broken guarantee and fails the run; the first 25 are
// printed (and every one of Porcupine's verdicts, see loud).
func (r *chaosRun) violate(format string, args ...any) {
	r.report(false, format, args...)
}

// loud is violate, printed whatever the count.
func (r *chaosRun) loud(format string, args ...any) {
	r.report(true, format, args...)
}

func (r *chaosRun) report(always bool, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.violations = append(r.violations, msg)
	n := len(r.violations)
	r.mu.Unlock()
	if n <= 25 || always {
		r.t.Errorf("chaos run: VIOLATION (seed %d, +%v): %s", r.cfg.seed, time.Since(r.begin).Round(time.Second), msg)
	}
}

func (r *chaosRun) pickOp(rng *rand.Rand) string {
	total := 0
	for _, k := range chaosOpNames {
		total += r.cfg.weights[k]
	}
	n := rng.IntN(max(total, 1))
	for _, k := range chaosOpNames {
		if n < r.cfg.weights[k] {
			return k
		}
		n -= r.cfg.weights[k]
	}
	return "acquire"
}

// run runs the actors, the bystander and the faults, then checks.
func (r *chaosRun) run() {
	t := r.t
	r.begin = time.Now()
	stop, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stopAll := sync.OnceFunc(func() { cancel(); wg.Wait() })
	t.Cleanup(stopAll)
	stuckStop := make(chan struct{})
	var stuckDone sync.WaitGroup
	stuckDone.Add(1)
	go func() { defer stuckDone.Done(); r.mon.watchStuck(stuckStop) }()
	for _, a := range r.actors {
		wg.Add(1)
		go func() { defer wg.Done(); a.loop(stop) }()
	}
	if os.Getenv(envChaosNoBystander) != "1" {
		wg.Add(1)
		go func() { defer wg.Done(); r.bystander(stop) }()
	}

	r.schedule(rand.New(rand.NewPCG(r.cfg.seed, 0)), r.begin.Add(r.cfg.duration))
	stopAll()
	r.faultsBusy.Wait()
	var proxies []*zktest.Proxy
	for _, s := range r.sessions {
		proxies = append(proxies, s.proxy)
	}
	healAll(t, r.c, proxies)
	close(stuckStop)
	stuckDone.Wait()
	elapsed := time.Since(r.begin)
	for _, s := range r.sessions {
		s.mu.Lock()
		s.sess.Close()
		s.mu.Unlock()
	}
	r.watchers.Wait()
	r.mon.checks.Wait()
	r.hygiene()
	t.Logf("chaos run: actors stopped after %v; checking %d register operations with Porcupine", elapsed.Round(time.Second), len(r.history))
	verdicts := r.checkHistory()
	r.summary(elapsed, verdicts)
	r.requireFigures()
	// The quorum timer (the sessions' default) ends an epoch before the
	// ensemble can expire its session: no grant of another session may come
	// first (conn's "The local timer").
	if m, n := r.mon.timerMargin(); n > 0 && m < 0 {
		r.t.Errorf("chaos run: VIOLATION (seed %d): another session was granted %v before the local timer ended the holder's epoch", r.cfg.seed, (-m).Round(time.Millisecond))
	}
}

// hygiene: once every session is closed, no lock node is left under the
// lock root (only empty lock paths, containers the server reaps), and the
// registers are deleted.
func (r *chaosRun) hygiene() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := conn.Connect(ctx, r.c.Servers(), conn.WithSessionTimeout(10*time.Second))
	if err != nil {
		r.t.Errorf("chaos run: admin session: %v", err)
		return
	}
	defer admin.Close()
	ep, err := connlink.Of(admin).Epoch(ctx)
	if err != nil {
		r.t.Errorf("chaos run: admin session: %v", err)
		return
	}
	var want []string
	for _, p := range chaosLockPaths(r.lockRoot) {
		want = append(want, p, p+"/locks", p+"/leases")
	}
	// Sessions closed while cut off end only when they expire.
	deadline := time.Now().Add(2*r.cfg.sessionTimeout + 10*time.Second)
	var left []string
	for {
		left, _, err = leftovers(ctx, ep, r.lockRoot, want)
		if err == nil && len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond) // polling the server's tree: not hiding a race
	}
	if err != nil {
		r.t.Errorf("chaos run: listing %s: %v", r.lockRoot, err)
	}
	for i, p := range left {
		if i == 20 {
			r.t.Errorf("chaos run: ... and %d more", len(left)-20)
			break
		}
		r.t.Errorf("chaos run: left behind after every session closed: %s", p)
	}
	if err := locktest.DeleteTree(ctx, ep, r.dataRoot); err != nil {
		r.t.Errorf("chaos run: deleting %s: %v", r.dataRoot, err)
	}
}

// schedule applies faults of the configured kinds, in shuffled rounds,
// 0.3–2 s apart, until the deadline; then waits out the run.
func (r *chaosRun) schedule(rng *rand.Rand, deadline time.Time) {
	var bag []string
	for time.Now().Before(deadline) {
		gap := 300*time.Millisecond + time.Duration(rng.Int64N(int64(1700*time.Millisecond)))
		time.Sleep(min(gap, max(time.Until(deadline), 0)))
		if !time.Now().Before(deadline) || len(r.cfg.faults) == 0 {
			continue
		}
		if len(bag) == 0 {
			for _, i := range rng.Perm(len(r.cfg.faults)) {
				bag = append(bag, r.cfg.faults[i])
			}
		}
		kind := bag[0]
		bag = bag[1:]
		at := time.Since(r.begin).Round(100 * time.Millisecond)
		desc, err := r.inject(rng, kind)
		if err != nil {
			r.t.Logf("chaos run: +%v %s: not applied: %v", at, kind, err)
			r.mu.Lock()
			r.notApplied[kind]++
			r.mu.Unlock()
			continue
		}
		if kind != faultCut && kind != faultGhost {
			r.countFault(kind)
		}
		r.t.Logf("chaos run: +%v %s %s", at, kind, desc)
	}
}

// pickSession picks the session to fault: three times in four one that
// holds a grant, if any does.
func (r *chaosRun) pickSession(rng *rand.Rand) *chaosSession {
	var holders []*chaosSession
	for _, s := range r.sessions {
		if s.held.Load() > 0 {
			holders = append(holders, s)
		}
	}
	if len(holders) > 0 && rng.IntN(4) != 0 {
		return holders[rng.IntN(len(holders))]
	}
	return r.sessions[rng.IntN(len(r.sessions))]
}

func (r *chaosRun) inject(rng *rand.Rand, kind string) (string, error) {
	st := r.cfg.sessionTimeout
	switch kind {
	case faultLeaderKill, faultFollowerKill:
		return killRestart(r.t, r.c, rng, kind == faultLeaderKill)
	case faultPause:
		return pauseResume(r.c, rng)
	case faultBlackholeLong, faultBlackholeShort:
		s := r.pickSession(rng)
		if kind == faultBlackholeLong {
			r.mon.sessionFault(s.sessID())
		}
		d := blackholeFor(rng, s.proxy, st, kind == faultBlackholeLong)
		return fmt.Sprintf("session %d for %v", s.idx, d.Round(time.Millisecond)), nil
	case faultExpire:
		s := r.pickSession(rng)
		sess, _ := s.current()
		sid, srv, err := expireSession(r.c, rng, sess, r.mon.sessionFault)
		if err != nil {
			return "", fmt.Errorf("session %d: %w", s.idx, err)
		}
		return fmt.Sprintf("session %d (0x%x) via %s", s.idx, sid, srv), nil
	case faultCut:
		s := r.sessions[rng.IntN(len(r.sessions))]
		s.cut.Store(true)
		return fmt.Sprintf("armed for session %d's next acquire", s.idx), nil
	case faultGhost:
		var bounded []*chaosSession
		for _, s := range r.sessions {
			if s.retry1 {
				bounded = append(bounded, s)
			}
		}
		if len(bounded) == 0 {
			bounded = r.sessions
		}
		s := bounded[rng.IntN(len(bounded))]
		if s.ghost.Load() {
			return "", fmt.Errorf("session %d: still armed", s.idx)
		}
		s.ghost.Store(true)
		return fmt.Sprintf("armed for session %d's next acquire (retry policy of one attempt: %v)", s.idx, s.retry1), nil
	}
	return "", fmt.Errorf("unknown fault kind %q", kind)
}

// bystander is a raw go-zookeeper client, not a recipe's: every 0.2–1.5 s
// it sets the data of ("__REVOKE__" or other bytes) or deletes a lock
// node, a holder's three times in four.
func (r *chaosRun) bystander(stop context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.seed, 1<<32))
	ctx, cancel := context.WithTimeout(stop, time.Minute)
	zc, err := bystanderClient(ctx, r.c.Servers())
	cancel()
	if err != nil {
		r.t.Errorf("chaos run: bystander: %v", err)
		return
	}
	defer zc.Close()
	paths := chaosLockPaths(r.lockRoot)
	for stop.Err() == nil {
		sleepCtx(stop, 200*time.Millisecond+time.Duration(rng.Int64N(int64(1300*time.Millisecond))))
		var node string
		if g := r.mon.randomActive(rng); g != nil && rng.IntN(4) != 0 {
			node = g.leases[rng.IntN(len(g.leases))].Path()
		} else {
			d := chaosDomains[rng.IntN(len(chaosDomains))]
			dir := paths[d]
			if d == domSemMutex {
				dir += "/leases"
			}
			kids, _, err := zc.Children(dir)
			if err != nil || len(kids) == 0 {
				continue
			}
			node = dir + "/" + kids[rng.IntN(len(kids))]
		}
		if rng.IntN(2) == 0 {
			r.mon.bystanderDeleted(node)
			err := zc.Delete(node, -1)
			if err == nil {
				r.mon.bystanderDeleteDone(node)
			}
			r.count("bystander delete: " + bystanderClass(err))
			r.mon.event(node, "deleted by the bystander: %s", bystanderClass(err))
		} else {
			data := []byte("__REVOKE__")
			if rng.IntN(2) == 0 {
				data = []byte("bystander")
			}
			_, err := zc.Set(node, data, -1)
			r.count("bystander write: " + bystanderClass(err))
			r.mon.event(node, "%q written by the bystander: %s", data, bystanderClass(err))
		}
	}
}

func bystanderClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, zk.ErrNoAuth):
		return "refused (no auth)"
	case errors.Is(err, zk.ErrNoNode):
		return "gone"
	case errors.Is(err, zk.ErrNotEmpty):
		return "not empty"
	}
	return "other: " + err.Error()
}

// summary logs the run's figures.
func (r *chaosRun) summary(elapsed time.Duration, verdicts map[string]porcupine.CheckResult) {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos run summary (seed %d): %v, %d sessions x %d actors + 1 x 1 (one-attempt retry policy), session timeout %v\n",
		r.cfg.seed, elapsed.Round(time.Second), r.cfg.sessions, r.cfg.actors, r.cfg.sessionTimeout)
	ops := 0
	for _, k := range chaosOpNames {
		ops += r.counts["op "+k]
	}
	fmt.Fprintf(&b, "  operations: %d (", ops)
	for i, k := range chaosOpNames {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.counts["op "+k])
	}
	b.WriteString(")\n")
	grants, local := 0, 0
	r.mon.mu.Lock()
	grants = len(r.mon.grants)
	for _, g := range r.mon.grants {
		if g.local {
			local++
		}
	}
	wins := r.mon.overlapWins
	stuck := r.mon.stuckWorst
	r.mon.mu.Unlock()
	fmt.Fprintf(&b, "  grants: %d, of which local handoffs %d\n", grants, local)
	total := 0
	for _, k := range chaosFaultKinds {
		total += r.faults[k]
	}
	fmt.Fprintf(&b, "  faults: %d:", total)
	for _, k := range chaosFaultKinds {
		fmt.Fprintf(&b, " %s %d (not applied %d);", k, r.faults[k], r.notApplied[k])
	}
	b.WriteString("\n")
	for _, excuse := range []string{excuseExpiry, excuseDelete} {
		var worst time.Duration
		for _, w := range wins[excuse] {
			worst = max(worst, w)
		}
		fmt.Fprintf(&b, "  overlaps within the %s window: %d, longest %v\n", excuse, len(wins[excuse]), worst.Round(time.Millisecond))
	}
	if m, n := r.mon.timerMargin(); n > 0 {
		fmt.Fprintf(&b, "  worst local-timer margin (lost signal to the next grant by another session): %v over %d handovers\n", m.Round(time.Millisecond), n)
	}
	var worstStuck time.Duration
	for _, d := range chaosDomains {
		worstStuck = max(worstStuck, stuck[d])
	}
	fmt.Fprintf(&b, "  longest time without a holder while acquires waited: %v (bound %v)\n", worstStuck.Round(time.Millisecond), r.cfg.stuckBound)
	fmt.Fprintf(&b, "  Porcupine:")
	for _, k := range sortedKeys(verdicts) {
		fmt.Fprintf(&b, " %s %s;", k, verdicts[k])
	}
	fmt.Fprintf(&b, " (%d operations)\n", len(r.history))
	b.WriteString("  counts:\n")
	for _, k := range sortedKeys(r.counts) {
		if !strings.HasPrefix(k, "op ") {
			fmt.Fprintf(&b, "    %-60s %d\n", k, r.counts[k])
		}
	}
	fmt.Fprintf(&b, "  violations: %d", len(r.violations))
	r.t.Log(b.String())
}

// requireFigures fails a run that did not do enough to prove anything.
func (r *chaosRun) requireFigures() {
	minutes := max(1, int(r.cfg.duration/time.Minute))
	for _, k := range r.cfg.faults {
		if r.faults[k] < minutes {
			r.t.Errorf("chaos run: fault %s applied %d times (not applied %d): want at least %d", k, r.faults[k], r.notApplied[k], minutes)
		}
	}
	r.mon.mu.Lock()
	byLock := map[string]int{}
	local := 0
	for _, g := range r.mon.grants {
		byLock[g.lock.name]++
		if g.local {
			local++
		}
	}
	r.mon.mu.Unlock()
	if r.cfg.weights["acquire"] > 0 {
		for _, l := range chaosLocks {
			if r.cfg.locks[l.name] && byLock[l.name] < 5*minutes {
				r.t.Errorf("chaos run: %s granted %d times: want at least %d", l.name, byLock[l.name], 5*minutes)
			}
		}
		if local < minutes {
			r.t.Errorf("chaos run: %d local handoffs: want at least %d", local, minutes)
		}
	}
	by := 0
	for k, n := range r.counts {
		if strings.HasPrefix(k, "bystander") && strings.HasSuffix(k, ": ok") {
			by += n
		}
	}
	if by < minutes && os.Getenv(envChaosNoBystander) != "1" {
		r.t.Errorf("chaos run: the bystander's writes and deletes took effect %d times: want at least %d", by, minutes)
	}
}
