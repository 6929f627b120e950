// Package attack_test tests the promises of zkrecipes' public documentation
// by combining features, faults and bystanders, one file per recipe or
// concern. It uses only the public API; each test starts from a fixture: a
// real ZooKeeper, sessions on it, a bystander client and the test's paths.
package attack_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// fixture is one test's ZooKeeper: the cluster (its methods promoted:
// Pause, Kill, FourLetter, ...), sessions on it, a bystander client and
// paths below the cluster's root.
type fixture struct {
	*zktest.Cluster
	t   *testing.T
	raw *zk.Conn
}

// newFixture starts a cluster for t (zktest.New), stopped in Cleanup.
func newFixture(t *testing.T, opts ...zktest.Option) *fixture {
	t.Helper()
	return &fixture{Cluster: zktest.New(t, opts...), t: t}
}

// setUp is how most tests begin: a fixture (started with opts) and a
// context that ends after d or with the test.
func setUp(t *testing.T, d time.Duration, opts ...zktest.Option) (*fixture, context.Context) {
	t.Helper()
	f := newFixture(t, opts...)
	return f, ctxT(t, d)
}

// In is the fixture seen from subtest t: sessions and the bystander it
// makes are closed when t ends.
func (f *fixture) In(t *testing.T) *fixture { return &fixture{Cluster: f.Cluster, t: t} }

// Session connects a session to every server (4 s session timeout unless
// opts say otherwise), closed in Cleanup.
func (f *fixture) Session(opts ...conn.Option) *conn.Session {
	f.t.Helper()
	return session(f.t, f.Servers(), opts...)
}

// SessionAt connects a session to the given addresses (a proxy's, or some
// of the servers).
func (f *fixture) SessionAt(addrs []string, opts ...conn.Option) *conn.Session {
	f.t.Helper()
	return session(f.t, addrs, opts...)
}

// Proxy puts a zktest.Proxy in front of every server.
func (f *fixture) Proxy() *zktest.Proxy { return zktest.NewProxy(f.t, f.Servers()) }

// Raw is the bystander: a plain go-zookeeper client, one per fixture.
func (f *fixture) Raw() *zk.Conn {
	f.t.Helper()
	if f.raw != nil {
		return f.raw
	}
	zc, ev, err := zk.Connect(f.Servers(), 5*time.Second, zk.WithLogger(silent{}))
	require.NoError(f.t, err, "raw connect")
	f.t.Cleanup(zc.Close)
	deadline := time.After(10 * time.Second)
	for zc.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			f.t.Fatalf("raw client: no session")
		}
	}
	f.raw = zc
	return zc
}

// mutexHeld has a session of its own take the mutex at path and hold it
// until the holder's release (or the test's end).
func (f *fixture) mutexHeld(ctx context.Context, path string) *holder {
	f.t.Helper()
	m, err := mutex.New(f.Session(), path)
	require.NoError(f.t, err)
	h := hold(ctx, m)
	h.wait(f.t, 10*time.Second, "B")
	return h
}

// Path is name below the cluster's root.
func (f *fixture) Path(name string) string { return f.Root() + "/" + name }

// Each runs fn as a subtest per name, each on f seen from its subtest.
func (f *fixture) Each(t *testing.T, names []string, fn func(t *testing.T, f *fixture, name string)) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) { fn(t, f.In(t), name) })
	}
}

// forEach runs fn as a subtest per name, each on a fixture of its own
// (started with opts).
func forEach(t *testing.T, names []string, fn func(t *testing.T, f *fixture, name string), opts ...zktest.Option) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) { fn(t, newFixture(t, opts...), name) })
	}
}

// ProxiedSession puts a proxy in front of every server and connects a
// session through it.
func (f *fixture) ProxiedSession(opts ...conn.Option) (*zktest.Proxy, *conn.Session) {
	f.t.Helper()
	px := f.Proxy()
	return px, f.SessionAt(px.Addrs(), opts...)
}

// suspend resets px's connections and blackholes the reconnects until s
// is suspended.
func suspend(t *testing.T, px *zktest.Proxy, s *conn.Session) {
	t.Helper()
	px.Blackhole()
	px.Cut()
	waitFor(t, 10*time.Second, "suspended", func() bool { return s.State() == conn.Suspended })
}

// Expire has server 0 expire ep's session (zktest.ExpireEpoch).
func (f *fixture) Expire(ctx context.Context, ep *conn.Epoch) {
	f.t.Helper()
	require.NoError(f.t, zktest.ExpireEpoch(ctx, f.Servers()[0], ep), "expire")
}

// Register creates path (persistent, world ACL) with data through the
// bystander, its parent the cluster's root: a resource that holders write.
func (f *fixture) Register(path string, data []byte) {
	f.t.Helper()
	ensure(f.t, f.Raw(), zkWorld, f.Root())
	_, err := f.Raw().Create(path, data, 0, zkWorld)
	require.NoError(f.t, err, "create "+path)
}

// zkWorld is the ACL that lets anyone do anything.
var zkWorld = zk.WorldACL(zk.PermAll)

const zkEphemeralSequential = zk.FlagEphemeral | zk.FlagSequence

// guardedCreate creates path (world ACL) through l's GuardedWrite.
func guardedCreate(ctx context.Context, l *conn.Lease, path string) error {
	_, err := l.GuardedWrite(ctx, &zk.CreateRequest{Path: path, Acl: zkWorld})
	return err
}

// guardedDelete deletes path (any version) through l's GuardedWrite.
func guardedDelete(ctx context.Context, l *conn.Lease, path string) error {
	_, err := l.GuardedWrite(ctx, &zk.DeleteRequest{Path: path, Version: -1})
	return err
}

// Data reads path's data through the bystander.
func (f *fixture) Data(path string) []byte {
	f.t.Helper()
	data, _, err := f.Raw().Get(path)
	require.NoError(f.t, err, "get "+path)
	return data
}

// fenceOf returns l's Fence.
func fenceOf(t *testing.T, ctx context.Context, l *conn.Lease) conn.Fence {
	t.Helper()
	fe, err := l.Fence(ctx)
	require.NoError(t, err, "fence")
	return fe
}

// guardedSet sets path's data through l's GuardedWrite, at version (-1
// for any).
func guardedSet(ctx context.Context, l *conn.Lease, path string, data []byte, version int32) error {
	_, err := l.GuardedWrite(ctx, &zk.SetDataRequest{Path: path, Data: data, Version: version})
	return err
}

// recv returns what ch yields within d (the zero value once ch is closed);
// it fails the test with the message if nothing comes.
func recv[T any](t *testing.T, ch <-chan T, d time.Duration, format string, args ...any) T {
	t.Helper()
	v, ok := within(ch, d)
	if !ok {
		t.Fatalf(format, args...)
	}
	return v
}

// quiet fails the test with the message if ch yields within d.
func quiet[T any](t *testing.T, ch <-chan T, d time.Duration, format string, args ...any) {
	t.Helper()
	if _, ok := within(ch, d); ok {
		t.Fatalf(format, args...)
	}
}

// within returns what ch yields within d, and whether it did.
func within[T any](ch <-chan T, d time.Duration) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	case <-time.After(d):
		var zero T
		return zero, false
	}
}

// closesWithin drains ch and reports whether it is closed within d.
func closesWithin[T any](ch <-chan T, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case _, open := <-ch:
			if !open {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// doneWithin reports whether every goroutine of wg ended within d.
func doneWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	_, ok := within(done, d)
	return ok
}

// timed calls fn with ctx bounded by d and returns how long it took.
func timed(ctx context.Context, d time.Duration, fn func(context.Context) error) (time.Duration, error) {
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	err := fn(c)
	return time.Since(start), err
}

// nodes formats as path's children at the time it is printed: a failure
// message's view of a queue.
type nodes struct {
	zc   *zk.Conn
	path string
}

func (n nodes) String() string { return fmt.Sprint(sortedBySeq(n.zc, n.path)) }

// session connects a conn.Session to servers and closes it in Cleanup.
func session(t *testing.T, servers []string, opts ...conn.Option) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s, err := conn.Connect(ctx, servers, testzk.WithDefault(conn.WithSessionTimeout(4*time.Second), opts)...)
	require.NoError(t, err, "connect")
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type silent struct{}

func (silent) Printf(string, ...any) {}

// locker is what every recipe's lock offers: mutex, semaphoremutex,
// exclusive, an rwlock's ReadLock or WriteLock, a multilock.
type locker interface {
	Acquire(context.Context) (*conn.Lease, error)
	Release(context.Context) error
}

// recipeSet is one handle of every recipe on one session, each on its own
// path below a root: m, rw, sm, sem (2 leases), x, e ("me"), and ml over
// a mutex of its own and sm.
type recipeSet struct {
	m   *mutex.InterProcessMutex
	rw  *rwlock.RWLock
	sm  *semaphoremutex.Mutex
	sem *semaphoremutex.Semaphore
	x   *exclusive.Lock
	e   *leader.Election
	ml  *multilock.MultiLock
}

func oneOfEach(s *conn.Session, root string) recipeSet {
	var r recipeSet
	r.m, _ = mutex.New(s, root+"/m")
	r.rw, _ = rwlock.New(s, root+"/rw")
	r.sm, _ = semaphoremutex.New(s, root+"/sm")
	r.sem, _ = semaphoremutex.NewSemaphore(s, root+"/sem", 2)
	r.x, _ = exclusive.New(s, root+"/x")
	r.e, _ = leader.New(s, root+"/l", "me")
	ma, _ := mutex.New(s, root+"/ma")
	r.ml, _ = multilock.New(ma, r.sm)
	return r
}

// mutexPair is a plain handle and a local-handoff one (bound 3) on path in
// s, whose waiters share one listing.
func mutexPair(s *conn.Session, path string) (plain, handoff *mutex.InterProcessMutex) {
	plain, _ = mutex.New(s, path)
	handoff, _ = mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	return plain, handoff
}

// acquirer is a handle whose Acquire returns one lease: every locker, and a
// semaphore.
type acquirer interface {
	Acquire(context.Context) (*conn.Lease, error)
}

// tryAcquirer is a handle with TryAcquire.
type tryAcquirer interface {
	TryAcquire(context.Context) (*conn.Lease, bool, error)
}

// acquireErr is a's Acquire, reporting only its error.
func acquireErr(a acquirer) func(context.Context) error {
	return func(ctx context.Context) error { _, err := a.Acquire(ctx); return err }
}

// tryErr is a's TryAcquire, reporting only its error.
func tryErr(a tryAcquirer) func(context.Context) error {
	return func(ctx context.Context) error { _, _, err := a.TryAcquire(ctx); return err }
}

// newRW makes an rwlock on path in s.
func newRW(t *testing.T, s *conn.Session, path string, opts ...lock.Option) *rwlock.RWLock {
	t.Helper()
	rw, err := rwlock.New(s, path, opts...)
	require.NoError(t, err)
	return rw
}

// electionOf is a leader.Election of participant id on path in s.
func electionOf(t *testing.T, s *conn.Session, path, id string) *leader.Election {
	t.Helper()
	e, err := leader.New(s, path, id)
	require.NoError(t, err)
	return e
}

// holder acquires a lock on its own goroutine and holds it until release
// (or until ctx ends).
type holder struct {
	got    chan *conn.Lease
	failed chan error
	rel    chan chan error
	done   chan struct{} // closed when its goroutine ends
	// relTimeout bounds the release's ctx when set (before release).
	relTimeout time.Duration
}

func hold(ctx context.Context, lk locker) *holder {
	h := &holder{got: make(chan *conn.Lease, 1), failed: make(chan error, 1), rel: make(chan chan error), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		l, err := lk.Acquire(ctx)
		if err != nil {
			h.failed <- err
			return
		}
		h.got <- l
		select {
		case done := <-h.rel:
			rctx := context.WithoutCancel(ctx)
			if h.relTimeout > 0 {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(rctx, h.relTimeout)
				defer cancel()
			}
			done <- lk.Release(rctx)
		case <-ctx.Done():
			_ = lk.Release(context.WithoutCancel(ctx))
		}
	}()
	return h
}

// wait returns the lease once granted; it fails the test if the acquire
// fails or is not granted within d.
func (h *holder) wait(t *testing.T, d time.Duration, who string) *conn.Lease {
	t.Helper()
	l, ok := h.granted(t, d, who)
	if !ok {
		t.Fatalf("%s: not granted within %v", who, d)
	}
	return l
}

// granted returns the lease if the acquire is granted within d, and
// whether it was; it fails the test if the acquire fails.
func (h *holder) granted(t *testing.T, d time.Duration, who string) (*conn.Lease, bool) {
	t.Helper()
	select {
	case l := <-h.got:
		return l, true
	case err := <-h.failed:
		t.Fatalf("%s: acquire: %v", who, err)
	case <-time.After(d):
	}
	return nil, false
}

// notGranted fails the test with msg if the acquire returns within d.
func (h *holder) notGranted(t *testing.T, d time.Duration, msg string) {
	t.Helper()
	select {
	case <-h.got:
		t.Fatal(msg)
	case err := <-h.failed:
		t.Fatalf("%s (err=%v)", msg, err)
	case <-time.After(d):
	}
}

// release tells the holder to release and returns Release's error.
func (h *holder) release() error {
	done := make(chan error, 1)
	h.rel <- done
	return <-done
}

// spawn runs fn(i) for i from 0 to n-1, each on a goroutine of its own;
// Wait on the result waits for them all.
func spawn(n int, fn func(i int)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	return &wg
}

// heldAgainst has B, a session of its own, hold the mutex at path, and
// makes A's plain and local-handoff handles on it in sA.
func (f *fixture) heldAgainst(ctx context.Context, sA *conn.Session, path string) (b *holder, plain, handoff *mutex.InterProcessMutex) {
	f.t.Helper()
	b = f.mutexHeld(ctx, path)
	plain, handoff = mutexPair(sA, path)
	return b, plain, handoff
}

// onSessions runs body on per goroutines for each of n new sessions and
// waits for them all. mk makes a session's handle, which its goroutines
// share; goroutine g of session si is body's i = si*per+g.
func onSessions[H any](f *fixture, n, per int, mk func(*conn.Session) H, body func(h H, i int)) {
	var wg sync.WaitGroup
	for si := 0; si < n; si++ {
		h := mk(f.Session())
		for g := 0; g < per; g++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				body(h, i)
			}(si*per + g)
		}
	}
	wg.Wait()
}

// stressDeadline is a stress test's acquire deadline: long, or in one
// acquire of three 5 to 60 ms, so that some give up while queued.
func stressDeadline(r *rand.Rand, long time.Duration) time.Duration {
	if r.Intn(3) == 0 {
		return time.Duration(5+r.Intn(55)) * time.Millisecond
	}
	return long
}

// oneAttempt is a retry policy of one attempt per request (no retry after
// a lost connection), backing off up to maxDelay.
func oneAttempt(maxDelay time.Duration) conn.Option {
	return conn.WithRetry(10*time.Millisecond, maxDelay, 1)
}

// createLostInBlackhole runs acquire (bounded by 12 s) with the answer to
// its next write, the lock node's create, blackholed by px; once the node
// is on the server (n children under path) the connection is reset and
// blackholed again for up to 2.5 s, so that the search for the node fails
// too. It returns the acquire's error, with px healed; note logs the steps.
func createLostInBlackhole(t *testing.T, ctx context.Context, px *zktest.Proxy, zc *zk.Conn, path string, n int, acquire func(context.Context) error, note func(string, ...any)) error {
	t.Helper()
	px.BlackholeAfterNextWrite()
	note("blackhole after next write")
	ech := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 12*time.Second)
		defer cancel()
		ech <- acquire(actx)
	}()
	waitFor(t, 10*time.Second, "the lost create on the server", func() bool { return len(children(zc, path)) >= n })
	lost := children(zc, path)
	t.Logf("nodes with the lost create: %v", lost)
	note("lost create seen: %v; heal, blackhole", lost)
	px.Heal()
	px.Blackhole()
	err, ok := within(ech, 2500*time.Millisecond)
	if !ok {
		note("heal after 2.5s")
		px.Heal()
		err = <-ech
	}
	px.Heal()
	note("first acquire ended: %v; healed", err)
	return err
}

// fenceStore is the resource of conn.Fence's doc, stricter: it keeps the
// greatest Fence it has seen and refuses any that is not above it (each
// grant writes once here, so every grant's token must be new).
type fenceStore struct {
	mu      sync.Mutex
	max     conn.Fence
	n       int
	passes  int // grants with Pass > 0 (local handoffs)
	refused []string
}

// write records who's grant's Fence f; false (with the greatest Fence seen
// before) if it is refused.
func (s *fenceStore) write(who string, f conn.Fence) (conn.Fence, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n > 0 && f.Compare(s.max) <= 0 {
		s.refused = append(s.refused, fmt.Sprintf("%s %v after %v", who, f, s.max))
		return s.max, false
	}
	s.max = f
	s.n++
	if f.Pass > 0 {
		s.passes++
	}
	return s.max, true
}

// occupancy counts the holders inside a lock, in process, and keeps the
// greatest count seen.
type occupancy struct{ inside, peak atomic.Int32 }

// enter counts one more holder and returns how many are inside.
func (o *occupancy) enter() int32 {
	n := o.inside.Add(1)
	for {
		p := o.peak.Load()
		if n <= p || o.peak.CompareAndSwap(p, n) {
			return n
		}
	}
}

func (o *occupancy) leave() { o.inside.Add(-1) }

// stressAcquire acquires with a stressDeadline. A short deadline that ran
// out while queued is no failure: it returns (nil, nil).
func stressAcquire(ctx context.Context, r *rand.Rand, long time.Duration, acquire func(context.Context) (*conn.Lease, error)) (*conn.Lease, error) {
	d := stressDeadline(r, long)
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	l, err := acquire(actx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && d < time.Second {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("deadline %v: %w", d, err)
	}
	return l, nil
}

// stressLoop acquires through acquire, each time with a stressDeadline,
// and hands every lease to use, until stop. It returns how many acquires
// gave up while queued, and the first other acquire error.
func stressLoop(ctx context.Context, r *rand.Rand, stop time.Time, long time.Duration, acquire func(context.Context) (*conn.Lease, error), use func(*conn.Lease)) (short int, err error) {
	for time.Now().Before(stop) {
		l, err := stressAcquire(ctx, r, long, acquire)
		if err != nil {
			return short, err
		}
		if l == nil {
			short++
			continue
		}
		use(l)
	}
	return short, nil
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ensure creates each of paths (persistent, with acl) through zc unless it
// exists.
func ensure(t *testing.T, zc *zk.Conn, acl []zk.ACL, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := zc.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(t, err, "create "+p)
		}
	}
}

// exists reports whether the bystander zc sees p.
func exists(zc *zk.Conn, p string) bool {
	ok, _, err := zc.Exists(p)
	return err == nil && ok
}

// children lists path's children through the bystander (nil if absent).
func children(zc *zk.Conn, path string) []string {
	ch, _, err := zc.Children(path)
	if err != nil {
		return nil
	}
	return ch
}

// watchesUnder lists the watched paths (wchp on server i) under prefix.
func watchesUnder(f *fixture, i int, prefix string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := f.FourLetter(ctx, i, "wchp")
	if err != nil {
		return []string{"wchp: " + err.Error()}
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if p := strings.TrimSpace(l); p == prefix || strings.HasPrefix(p, prefix+"/") {
			got = append(got, p)
		}
	}
	return got
}

// countNodes counts the ephemeral nodes under path (lock nodes; the
// container parents the recipes create are the server's to remove).
func countNodes(zc *zk.Conn, path string) int {
	n := 0
	for _, ch := range children(zc, path) {
		p := path + "/" + ch
		if _, st, err := zc.Get(p); err == nil && st.EphemeralOwner != 0 {
			n++
		}
		n += countNodes(zc, p)
	}
	return n
}

// watched reports whether server i lists a watch on path (wchp).
func watched(f *fixture, i int, path string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := f.FourLetter(ctx, i, "wchp")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == path {
			return true
		}
	}
	return false
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// metricsRec keeps the watches gauge, every lock event and the count of
// leader term starts and ends its Hooks are told, for the metric checks.
type metricsRec struct {
	watches      atomic.Int64
	starts, ends atomic.Int64
	mu           sync.Mutex
	locks        []metrics.Lock
	states       []string
}

// metered is a session whose Hooks report to a new metricsRec.
func (f *fixture) metered(opts ...conn.Option) (*metricsRec, *conn.Session) {
	f.t.Helper()
	rec := &metricsRec{}
	return rec, f.Session(append(opts, conn.WithMetrics(rec.Hooks()))...)
}

func (m *metricsRec) Hooks() metrics.Hooks {
	return metrics.Hooks{State: m.State, Lock: m.Lock, Watches: m.Watches, Leader: m.Leader}
}

func (m *metricsRec) Leader(l metrics.Leader) {
	if l.Leading {
		m.starts.Add(1)
	} else {
		m.ends.Add(1)
	}
}

func (m *metricsRec) Watches(d int) { m.watches.Add(int64(d)) }

func (m *metricsRec) Lock(l metrics.Lock) {
	m.mu.Lock()
	m.locks = append(m.locks, l)
	m.mu.Unlock()
}

func (m *metricsRec) State(e metrics.Transition) {
	m.mu.Lock()
	m.states = append(m.states, e.State)
	m.mu.Unlock()
}

// count returns how many lock events match ev (and outcome or cause, when
// not empty).
func (m *metricsRec) count(ev string, recipe, detail string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.locks {
		if l.Event != ev || (recipe != "" && l.Recipe != recipe) {
			continue
		}
		if detail != "" && l.Outcome != detail && l.Cause != detail {
			continue
		}
		n++
	}
	return n
}

// expect reports an error unless want lock events match ev (and recipe,
// outcome or cause, when not empty); what names the count.
func (m *metricsRec) expect(t *testing.T, want int, ev string, recipe, detail, what string) {
	t.Helper()
	if got := m.count(ev, recipe, detail); got != want {
		t.Errorf("%s = %d, want %d: %s", what, got, want, m.dump())
	}
}

// gaugeDrains reports an error unless the watches gauge is back to 0
// within d.
func (m *metricsRec) gaugeDrains(t *testing.T, d time.Duration) {
	t.Helper()
	if !eventually(d, func() bool { return m.watches.Load() == 0 }) {
		t.Errorf("watches gauge %d, want 0", m.watches.Load())
	}
}

func (m *metricsRec) dump() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, l := range m.locks {
		fmt.Fprintf(&b, "%s/%s/%s%s ", l.Event, l.Recipe, l.Outcome, l.Cause)
	}
	return b.String()
}

// sessionWatches lists the paths server i holds watches on for session sid
// (wchc).
func sessionWatches(t *testing.T, f *fixture, i int, sid int64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, err := f.FourLetter(ctx, i, "wchc")
	require.NoError(t, err, "wchc")
	var paths []string
	in := false
	want := fmt.Sprintf("0x%x", sid)
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "\t") && strings.TrimSpace(l) != "" {
			in = strings.TrimSpace(l) == want
			continue
		}
		if in && strings.TrimSpace(l) != "" {
			paths = append(paths, strings.TrimSpace(l))
		}
	}
	return paths
}

// noWatchesLeft reports an error unless server 0 lists no watch of s's
// current session within d.
func noWatchesLeft(t *testing.T, f *fixture, s *conn.Session, d time.Duration, who string) {
	t.Helper()
	noWatchesOf(t, f, epochOf(t, s).SessionID(), d, who)
}

// noWatchesOf reports an error unless server 0 lists no watch of session
// sid within d.
func noWatchesOf(t *testing.T, f *fixture, sid int64, d time.Duration, who string) {
	t.Helper()
	if !eventually(d, func() bool { return len(sessionWatches(t, f, 0, sid)) == 0 }) {
		t.Errorf("%s keeps watches on the server: %v", who, sessionWatches(t, f, 0, sid))
	}
}

// epochOf returns the session's live epoch.
func epochOf(t *testing.T, s *conn.Session) *conn.Epoch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err, "epoch")
	return ep
}

// eventually polls cond every 10 ms for up to d and reports whether it held.
func eventually(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// seqOf returns the sequence number at the end of a lock node's name.
func seqOf(node string) int {
	i := strings.LastIndexByte(node, '-')
	n, _ := strconv.Atoi(node[i+1:])
	return n
}

// sortedBySeq lists path's children sorted by sequence number.
func sortedBySeq(zc *zk.Conn, path string) []string {
	ch := children(zc, path)
	sort.Slice(ch, func(i, j int) bool { return seqOf(ch[i]) < seqOf(ch[j]) })
	return ch
}

// newLocker makes a fresh handle of recipe on path in s (each waiter its
// own): mutex, semaphoremutex (and their -handoff forms), mutex-revocable,
// rwlock (its write lock; also rwlock-write), rwlock-read,
// rwlock-revocable, semaphore-N (N leases, up to 3), multilock, exclusive
// or leader; i names a leader's participant.
func newLocker(t *testing.T, recipe string, s *conn.Session, path string, i int) locker {
	t.Helper()
	var lk locker
	var err error
	switch recipe {
	case "mutex":
		lk, err = mutex.New(s, path)
	case "mutex-handoff":
		lk, err = mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	case "mutex-revocable":
		lk, err = mutex.New(s, path, lock.WithRevocable())
	case "semaphoremutex":
		lk, err = semaphoremutex.New(s, path)
	case "semaphoremutex-handoff":
		lk, err = semaphoremutex.New(s, path, lock.WithLocalHandoff(3, 0))
	case "rwlock", "rwlock-write", "rwlock-revocable", "rwlock-read":
		var opts []lock.Option
		if recipe == "rwlock-revocable" {
			opts = append(opts, lock.WithRevocable())
		}
		var rw *rwlock.RWLock
		rw, err = rwlock.New(s, path, opts...)
		if err == nil {
			lk = rw.WriteLock()
			if recipe == "rwlock-read" {
				lk = rw.ReadLock()
			}
		}
	case "semaphore-1", "semaphore-2", "semaphore-3":
		n, _ := strconv.Atoi(strings.TrimPrefix(recipe, "semaphore-"))
		var sem *semaphoremutex.Semaphore
		sem, err = semaphoremutex.NewSemaphore(s, path, n)
		lk = &semLocker{sem: sem}
	case "multilock":
		lk, err = newMultiLocker(s, path)
	case "exclusive":
		lk, err = exclusive.New(s, path)
	case "leader":
		var e *leader.Election
		e, err = leader.New(s, path, "p"+strconv.Itoa(i))
		lk = electionLocker{e}
	default:
		t.Fatalf("recipe %q", recipe)
	}
	require.NoError(t, err)
	return lk
}

// semLocker makes a semaphore a locker: Release returns the lease taken
// last (and keeps it when the return fails, for another try).
type semLocker struct {
	sem    *semaphoremutex.Semaphore
	mu     sync.Mutex
	leases []*conn.Lease
}

func (l *semLocker) Acquire(ctx context.Context) (*conn.Lease, error) {
	lease, err := l.sem.Acquire(ctx)
	if err == nil {
		l.mu.Lock()
		l.leases = append(l.leases, lease)
		l.mu.Unlock()
	}
	return lease, err
}

func (l *semLocker) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.leases) == 0 {
		return lock.ErrNotHeld
	}
	last := l.leases[len(l.leases)-1]
	err := l.sem.ReturnLease(ctx, last)
	if err == nil {
		l.leases = l.leases[:len(l.leases)-1]
	}
	return err
}

// multiLocker makes a multilock over a mutex on path and a semaphore mutex
// on path-other a locker whose lease is the mutex's.
type multiLocker struct {
	ml   *multilock.MultiLock
	path string
}

func newMultiLocker(s *conn.Session, path string) (*multiLocker, error) {
	a, err := mutex.New(s, path)
	if err != nil {
		return nil, err
	}
	b, err := semaphoremutex.New(s, path+"-other")
	if err != nil {
		return nil, err
	}
	ml, err := multilock.New(a, b)
	return &multiLocker{ml, path}, err
}

func (l *multiLocker) Acquire(ctx context.Context) (*conn.Lease, error) {
	ls, err := l.ml.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	for _, lease := range ls {
		if zkpath.Parent(lease.Path()) == l.path {
			return lease, nil
		}
	}
	return nil, errors.New("no lease under " + l.path)
}

func (l *multiLocker) Release(ctx context.Context) error { return l.ml.Release(ctx) }

// electionLocker makes a leader.Election a locker.
type electionLocker struct{ e *leader.Election }

func (l electionLocker) Acquire(ctx context.Context) (*conn.Lease, error) { return l.e.Campaign(ctx) }
func (l electionLocker) Release(ctx context.Context) error                { return l.e.Resign(ctx) }

// drainWaiter is one queued contender of the drain test.
type drainWaiter struct {
	sess   int
	node   string // the node it queued (children diff)
	cancel context.CancelFunc
	fate   string // "survivor", "cancelled", "deleted"
	// results
	lease    *conn.Lease
	err      error
	grantIdx int64 // set by the waiter's goroutine; read after it ended. Order of the grant among all grants (1-based), 0 if none
	overlap  string
	granted  atomic.Bool
}

// runDrain: holder H (session D) holds; n waiters, interleaved over the
// sessions ss, queue one after the other (each its own handle and
// goroutine); then, at once, a random third of them is cancelled (one
// cancel each, called from one loop), a bystander deletes a random sixth of
// the others' nodes, and H releases. Returns the waiters after every
// Acquire returned (or fails the test after 60 s naming the stuck ones).
func runDrain(t *testing.T, f *fixture, recipe, path string, ss []*conn.Session, hs *conn.Session, n int, seed int64, concurrent bool) []*drainWaiter {
	t.Helper()
	ctx := ctxT(t, 120*time.Second)
	zc := f.Raw()
	rng := rand.New(rand.NewSource(seed))
	h := hold(ctx, newLocker(t, recipe, hs, path, 1000))
	h.wait(t, 60*time.Second, "h")
	var mu sync.Mutex
	holding := map[*drainWaiter]bool{}
	var grants atomic.Int64
	ws := make([]*drainWaiter, n)
	var wg sync.WaitGroup
	known := map[string]bool{}
	for _, ch := range children(zc, path) {
		known[ch] = true
	}
	for i := 0; i < n; i++ {
		w := &drainWaiter{sess: i % len(ss)}
		switch r := rng.Intn(6); {
		case r < 2:
			w.fate = "cancelled"
		case r == 2:
			w.fate = "deleted"
		default:
			w.fate = "survivor"
		}
		ws[i] = w
		wctx, cancel := context.WithCancel(ctx)
		w.cancel = cancel
		lk := newLocker(t, recipe, ss[w.sess], path, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := lk.Acquire(wctx)
			if err != nil {
				w.err = err
				return
			}
			w.lease = l
			w.grantIdx = grants.Add(1)
			w.granted.Store(true)
			mu.Lock()
			for o := range holding {
				if o != w {
					w.overlap += o.node + " "
				}
			}
			excused := w.fate == "deleted" && recipe != "leader"
			if !excused {
				holding[w] = true
			}
			mu.Unlock()
			// hold for a moment, as a holder does
			select {
			case <-l.Lost():
			case <-time.After(2 * time.Millisecond):
			}
			mu.Lock()
			delete(holding, w)
			mu.Unlock()
			if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
				w.err = err
			}
		}()
		// its node: the one new child
		waitFor(t, 10*time.Second, "waiter queued", func() bool {
			for _, ch := range children(zc, path) {
				if !known[ch] {
					known[ch] = true
					w.node = ch
					return true
				}
			}
			return false
		})
	}
	// At once: cancels, bystander deletes, release.
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		for _, w := range ws {
			if w.fate == "cancelled" {
				w.cancel()
			}
		}
	}()
	go func() {
		defer bg.Done()
		for _, w := range ws {
			if w.fate == "deleted" {
				_ = zc.Delete(path+"/"+w.node, -1)
			}
		}
	}()
	if !concurrent {
		bg.Wait()
	}
	require.NoError(t, h.release())
	bg.Wait()
	if !doneWithin(&wg, 60*time.Second) {
		var stuck []string
		for i, w := range ws {
			if !w.granted.Load() && w.fate != "cancelled" {
				stuck = append(stuck, strconv.Itoa(i)+":"+w.fate+":"+w.node)
			}
		}
		t.Fatalf("waiters stuck after 60 s (not cancelled, never granted): %v; nodes now %v", stuck, sortedBySeq(zc, path))
	}
	for _, w := range ws {
		w.cancel()
	}
	return ws
}

// traceLog keeps a session's log lines and state transitions, time-stamped,
// for a failing test to print.
type traceLog struct {
	mu    sync.Mutex
	lines []string
	t0    time.Time
}

func newTraceLog() *traceLog { return &traceLog{t0: time.Now()} }

func (d *traceLog) add(s string) {
	d.mu.Lock()
	d.lines = append(d.lines, fmt.Sprintf("%8.3fs %s", time.Since(d.t0).Seconds(), s))
	d.mu.Unlock()
}

func (d *traceLog) note(f string, a ...any) { d.add("TEST " + fmt.Sprintf(f, a...)) }

// hooks reports the session's transitions into the log.
func (d *traceLog) hooks() metrics.Hooks {
	return metrics.Hooks{State: func(e metrics.Transition) {
		if e.Err != nil {
			d.add(fmt.Sprintf("STATE %s(session 0x%x: %v)", e.State, e.SessionID, e.Err))
			return
		}
		d.add(fmt.Sprintf("STATE %s(session 0x%x)", e.State, e.SessionID))
	}}
}

func (d *traceLog) dump() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

func (d *traceLog) Write(p []byte) (int, error) {
	d.add(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (d *traceLog) Sync() error { return nil }

func (d *traceLog) logger() *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = ""
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), d, zap.DebugLevel))
}
