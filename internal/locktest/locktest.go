package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Locker is the method set every lock of this module has, and what the
// suite tests.
type Locker interface {
	// Acquire blocks until held or ctx ends (ctx's error wrapped).
	Acquire(ctx context.Context) (*conn.Lease, error)
	// TryAcquire makes one attempt; (nil, false, nil) when someone else
	// holds the lock.
	TryAcquire(ctx context.Context) (*conn.Lease, bool, error)
	Release(ctx context.Context) error
	Path() string
}

// NewLockFunc returns a new handle on the lock at path over session s. The
// suite calls it once per contender, each with its own session; failing to
// build the handle should fail t.
type NewLockFunc func(t *testing.T, s *conn.Session, path string) Locker

// Option configures Run and RunFaults; each suite ignores the options
// that do not concern it.
type Option func(*config)

type config struct {
	fifo           bool
	cluster        *zktest.Cluster
	contenders     int
	rounds         int
	sessionTimeout time.Duration
	ensemble       bool
	rival          NewLockFunc // nil: the lock under test
	reentrant      bool
	findByData     bool
	noTry          bool
	noLabel        bool
	lostWrite      int
}

func defaultConfig() config {
	return config{contenders: 20, rounds: 5, sessionTimeout: 8 * time.Second, ensemble: true,
		lostWrite: 1}
}

// WithFIFO makes the suite check that contenders that queued one after
// another are granted in queue order (default false: the naive lock is
// unfair).
func WithFIFO(v bool) Option { return func(c *config) { c.fifo = v } }

// WithCluster runs the suite on c instead of a fresh single server started
// with zktest.New. The suite kills and restarts server 0 (skipped on an
// external ensemble), so c must not be shared with tests running in
// parallel. Default: nil (start one). The leader-kill test always starts
// its own three-server ensemble.
func WithCluster(c *zktest.Cluster) Option { return func(cfg *config) { cfg.cluster = c } }

// WithContenders sets the number of contenders (each on its own session) of
// the mutual-exclusion test (default 20). Values below 2 are raised to 2.
func WithContenders(n int) Option { return func(c *config) { c.contenders = max(n, 2) } }

// WithRounds sets how many times each contender of the mutual-exclusion
// test acquires and releases (default 5). Values below 1 are raised to 1.
func WithRounds(n int) Option { return func(c *config) { c.rounds = max(n, 1) } }

// WithSessionTimeout sets the session timeout of every contender's session
// (default 8s, long enough for a local server restart to keep sessions
// alive; the server clamps it to 20 ticks, 10 s with zktest's default).
// Values below 1s are raised to 1s.
func WithSessionTimeout(d time.Duration) Option {
	return func(c *config) { c.sessionTimeout = max(d, time.Second) }
}

// WithEnsemble says whether to run the leader-kill test on a three-server
// ensemble, which costs a few seconds to start (default true; it is skipped
// under -short either way).
func WithEnsemble(v bool) Option { return func(c *config) { c.ensemble = v } }

// WithRival sets the contender that the tests where one holds and another
// waits put against the lock under test: it holds while the tested lock
// queues, and queues while the tested lock holds. Default: nil, the lock
// under test itself. A lock that shares with its own kind (a read lock)
// needs one that excludes it (the write lock).
func WithRival(f NewLockFunc) Option { return func(c *config) { c.rival = f } }

// WithReentrant says that the lock is reentrant per goroutine (as the suite
// drives it: Pin gives every handle one goroutine), so that the suite
// checks that re-entering a lease that was lost is refused with
// conn.ErrLeaseLost (default false: a further Acquire on a held handle
// waits).
func WithReentrant(v bool) Option { return func(c *config) { c.reentrant = v } }

// WithFindByData says that the lock's node names do not carry the acquire
// id, so that a contender whose create answer was lost finds its node by
// reading candidates' data; RunFaults then checks that it did (default
// false).
func WithFindByData(v bool) Option { return func(c *config) { c.findByData = v } }

// WithoutTryAcquire says that the lock has no TryAcquire of its own (its
// Locker's TryAcquire is not to be called), so that RunDeadlines skips
// the TryAcquire cases (default false).
func WithoutTryAcquire() Option { return func(c *config) { c.noTry = true } }

// WithoutLabel says that the lock neither writes nor checks a label (an
// election's data is its participant id) (default false).
func WithoutLabel() Option { return func(c *config) { c.noLabel = true } }

// WithLostWrite says which request of an acquire (counted from its first,
// on an uncontended lock whose paths exist) RunDeadlines blackholes the
// connection right after, in its "blackholed after" cases: 1, the default,
// is the create; a later one reaches a lock's later writes (a semaphore's
// lease transaction, a multilock's second create). Values below 1 are
// raised to 1. With a value above 1, RunDeadlines runs only the cases
// that depend on it.
func WithLostWrite(n int) Option { return func(c *config) { c.lostWrite = max(n, 1) } }

// suite is one Run or RunFaults.
type suite struct {
	cfg     config
	cluster *zktest.Cluster
	newLock NewLockFunc
}

// newRival returns the rival's handle (see WithRival) on path over sess.
func (s *suite) newRival(t *testing.T, sess *conn.Session, path string) Locker {
	if s.cfg.rival != nil {
		return s.cfg.rival(t, sess, path)
	}
	return s.newLock(t, sess, path)
}

// newSuite applies opts and starts a cluster unless one was given.
func newSuite(t *testing.T, newLock NewLockFunc, opts []Option) *suite {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	c := cfg.cluster
	if c == nil {
		c = zktest.New(t)
	}
	return &suite{cfg: cfg, cluster: c, newLock: newLock}
}

// Run runs the contract suite against the lock type newLock builds, as
// subtests of t, one after another (never in parallel: some restart the
// server). Each subtest works on its own path under the cluster's Root.
func Run(t *testing.T, newLock NewLockFunc, opts ...Option) {
	s := newSuite(t, newLock, opts)
	t.Run("MutualExclusion", s.testMutualExclusion)
	if s.cfg.fifo {
		t.Run("FIFO", s.testFIFO)
	}
	t.Run("TryAcquireRace", s.testTryAcquireRace)
	t.Run("CancelledBeforeAcquire", s.testCancelledBefore)
	t.Run("TimeoutWhileQueued", func(t *testing.T) { s.testAbandonWhileQueued(t, false) })
	t.Run("CancelWhileQueued", func(t *testing.T) { s.testAbandonWhileQueued(t, true) })
	s.runAbandon(t)
	t.Run("ReleaseNotHeld", s.testReleaseNotHeld)
	t.Run("Label", s.testLabel)
	t.Run("RefusedRelease", s.testRefusedRelease)
	t.Run("HolderSessionExpired", s.testHolderExpired)
	t.Run("RestartWhileQueued", s.testRestartWhileQueued)
	t.Run("RestartWhileHolding", s.testRestartWhileHolding)
	if s.cfg.ensemble {
		t.Run("LeaderKill", s.testLeaderKill)
	}
}
