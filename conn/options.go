package conn

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/metrics"
)

// Option configures a Session. Each option documents its default and what an
// invalid value does: Connect rejects it with an error matching
// ErrInvalidArgument.
type Option func(*config) error

type config struct {
	sessionTimeout  time.Duration
	connectTimeout  time.Duration
	logger          *zap.Logger
	digest          []string // "user:password" entries; never logged
	dialer          zk.Dialer
	namespace       string
	retry           retryPolicy
	acl             []zk.ACL
	suspendedAsLost bool
	quorumTimer     bool
	hooks           metrics.Hooks // WithMetrics; zero: none
	closeWait       time.Duration // how long closing a zk.Conn waits for go-zookeeper's goroutines
	patchedZK       bool          // WithPatchedZK (zkversion.go)
}

func defaultConfig() config {
	return config{
		sessionTimeout: 10 * time.Second,
		connectTimeout: 15 * time.Second,
		logger:         zap.NewNop(),
		retry:          defaultRetryPolicy(),
		acl:            zk.WorldACL(zk.PermAll),
		closeWait:      10 * time.Second,
		quorumTimer:    true,
	}
}

// withCloseWait sets how long closing a zk.Conn waits for go-zookeeper's
// goroutines to end before it leaves them behind (default 10s; see
// Session.closeLink). For tests.
func withCloseWait(d time.Duration) Option {
	return func(c *config) error {
		c.closeWait = d
		return nil
	}
}

// WithSessionTimeout sets the session timeout asked of the server (default
// 10s). The server clamps it to [2, 20] ticks; the negotiated value is what
// the local timer uses. Values below 100ms are invalid.
func WithSessionTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 100*time.Millisecond {
			return fmt.Errorf("session timeout %v is below 100ms: %w", d, ErrInvalidArgument)
		}
		c.sessionTimeout = d
		return nil
	}
}

// WithConnectTimeout bounds how long Connect waits for the first session
// (default 15s), in addition to Connect's context. Zero or negative is
// invalid.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("connect timeout %v must be positive: %w", d, ErrInvalidArgument)
		}
		c.connectTimeout = d
		return nil
	}
}

// WithLogger sets the logger (default zap.NewNop(): silent). go-zookeeper's
// own log lines are routed through it at Debug level. nil is invalid.
func WithLogger(l *zap.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("nil logger: %w", ErrInvalidArgument)
		}
		c.logger = l
		return nil
	}
}

// WithDigestAuth adds digest credentials, sent to the server at the start of
// every session before the session is handed to callers (default: none),
// before the session's own identity (see WithACL), which is always sent. A
// connection cut while they are sent keeps the session: the rest is sent
// on reconnect, unless the local timer ends the session first. A server
// that refuses them (AUTHFAILED) makes the session give that ZooKeeper
// session up and open another after a backoff (250 ms doubling up to 30 s,
// with jitter, from the first refusal in a row); Connect's and Epoch's
// errors then match ErrAuthFailed. An empty user is invalid. The password
// is never logged.
func WithDigestAuth(user, password string) Option {
	return func(c *config) error {
		if user == "" {
			return fmt.Errorf("digest auth needs a user name: %w", ErrInvalidArgument)
		}
		c.digest = append(c.digest, user+":"+password)
		return nil
	}
}

// WithDialer sets how TCP connections to the servers are made, for TLS or a
// proxy (default: net.DialTimeout). nil is invalid.
func WithDialer(d zk.Dialer) Option {
	return func(c *config) error {
		if d == nil {
			return fmt.Errorf("nil dialer: %w", ErrInvalidArgument)
		}
		c.dialer = d
		return nil
	}
}

// WithNamespace prefixes every path with ns, a chroot that callers never see
// (default: none). ns must be a valid absolute path (as every path a
// Session is given: see ErrInvalidArgument) other than "/" and outside
// /zookeeper; anything else fails Connect with an error matching
// ErrInvalidArgument.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if ns == "/" {
			return fmt.Errorf("namespace: %q is the root, which is no namespace (leave WithNamespace out): %w", ns, ErrInvalidArgument)
		}
		if err := zkpath.Validate(ns); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
		c.namespace = ns
		return nil
	}
}

// WithRetry sets how idempotent operations (reads, deletes, versioned
// sets, non-sequential creates) are retried when the connection drops
// under them: exponential backoff from base, doubling up to max, with full
// jitter, for at most maxAttempts attempts, the first included (0: no
// bound but the caller's context and the epoch, which bound retries
// always). Sequential creates and multis are never retried blindly.
// Default: WithRetry(20*time.Millisecond, time.Second, 0). Invalid: base
// not above 0, max below base, maxAttempts below 0.
func WithRetry(base, max time.Duration, maxAttempts int) Option {
	return func(c *config) error {
		if base <= 0 || max < base || maxAttempts < 0 {
			return fmt.Errorf("retry: base %v, max %v, maxAttempts %d: needs 0 < base <= max and maxAttempts >= 0: %w",
				base, max, maxAttempts, ErrInvalidArgument)
		}
		c.retry = retryPolicy{BaseDelay: base, MaxDelay: max, MaxAttempts: maxAttempts}
		return nil
	}
}

// WithACL sets the ACL of the nodes the recipes create (default
// zk.WorldACL(zk.PermAll): anyone may do anything). Lock nodes get it
// sealed unless a recipe is asked for revocable nodes: every entry without
// WRITE and ADMIN, plus the session's own digest identity (random, made by
// Connect and added to every ZooKeeper session of it) with ALL, so that
// only their own session can change them. An empty ACL is invalid.
func WithACL(acl []zk.ACL) Option {
	return func(c *config) error {
		if len(acl) == 0 {
			return fmt.Errorf("empty ACL: %w", ErrInvalidArgument)
		}
		c.acl = append([]zk.ACL(nil), acl...)
		return nil
	}
}

// WithSuspendedAsLost is the error policy: a lock holder is told its lock
// is lost as soon as the connection is Suspended. Default (without it):
// only when the epoch ends (Lost), which the default quorum timer signals
// before the server can expire the session (see WithLastHeardTimer).
func WithSuspendedAsLost() Option {
	return func(c *config) error {
		c.suspendedAsLost = true
		return nil
	}
}

// WithLastHeardTimer replaces the default local timer, the quorum timer,
// with the last-heard timer. The local timer ends an epoch when the server
// cannot say so (ErrSessionTimeout); "The local timer" in the package
// documentation gives both in full, with their margins.
//
// The quorum timer (the default): the session sends a sync every twelfth
// of the session timeout T while an epoch lives (12/T requests per second
// per session: 1.2/s at the default 10 s, 4/s at 3 s),
// and ends the epoch 7T/12 after the send time of the last sync answered
// (or of a reconnect's handshake), connected or not. A sync is answered
// only through the ensemble's leader, the only server that expires
// sessions, so the epoch, and every lease and leader term of it, ends
// before the leader can expire the session and grant what it held to
// someone else; a follower cut off from the leader, which still answers
// pings, does not keep it alive. A connection back within T/2 of a cut
// keeps the epoch. The price: the epoch also ends while the connection is
// up when no sync sent in the last 7T/12 is answered: a leader election
// or a stalled leader longer than about T/2, or a link whose round trip
// exceeds about T/2.
//
// The last-heard timer (this option): no syncs, and the epoch ends T after
// the last byte heard from the connected server, counted only while
// disconnected. It never gives up a session the server kept and sends
// nothing extra, but the server may expire the session first (it counts
// from the last request it received, rounded up to a tick, which leaves a
// margin of luck), and a server cut off from its quorum that still answers
// pings keeps the timer from starting: another client can then be granted
// a lock, or lead, while this one still holds.
func WithLastHeardTimer() Option {
	return func(c *config) error {
		c.quorumTimer = false
		return nil
	}
}
