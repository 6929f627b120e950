// Package attack_test probes the promises of zkrecipes' public documentation
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

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
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

// session connects a conn.Session to servers and closes it in Cleanup.
func session(t *testing.T, servers []string, opts ...conn.Option) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	opts = append([]conn.Option{conn.WithSessionTimeout(4 * time.Second)}, opts...)
	s, err := conn.Connect(ctx, servers, opts...)
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
	select {
	case l := <-h.got:
		return l
	case err := <-h.failed:
		t.Fatalf("%s: acquire: %v", who, err)
	case <-time.After(d):
		t.Fatalf("%s: not granted within %v", who, d)
	}
	return nil
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

// stressDeadline is a stress test's acquire deadline: long, or in one
// acquire of three 5 to 60 ms, so that some give up while queued.
func stressDeadline(r *rand.Rand, long time.Duration) time.Duration {
	if r.Intn(3) == 0 {
		return time.Duration(5+r.Intn(55)) * time.Millisecond
	}
	return long
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

// children lists path's children through the bystander (nil if absent).
func children(zc *zk.Conn, path string) []string {
	ch, _, err := zc.Children(path)
	if err != nil {
		return nil
	}
	return ch
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

// metricsRec keeps the watches gauge and every lock event its Hooks are
// told, for the metric checks.
type metricsRec struct {
	watches atomic.Int64
	mu      sync.Mutex
	locks   []metrics.Lock
	states  []string
}

func (m *metricsRec) Hooks() metrics.Hooks {
	return metrics.Hooks{State: m.State, Lock: m.Lock, Watches: m.Watches}
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
// own); i names a leader's participant.
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
	case "rwlock", "rwlock-revocable":
		var opts []lock.Option
		if recipe == "rwlock-revocable" {
			opts = append(opts, lock.WithRevocable())
		}
		var rw *rwlock.RWLock
		rw, err = rwlock.New(s, path, opts...)
		if err == nil {
			lk = rw.WriteLock()
		}
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
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
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
