package conn

import (
	"fmt"
	"net"
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
	patchedZK       bool
}

func defaultConfig() config {
	return config{
		sessionTimeout: 10 * time.Second,
		logger:         zap.NewNop(),
		dialer:         net.DialTimeout,
		retry:          retryPolicy{BaseDelay: 20 * time.Millisecond, MaxDelay: time.Second},
		acl:            zk.WorldACL(zk.PermAll),
		closeWait:      10 * time.Second,
		quorumTimer:    true,
	}
}

// checked is an Option that fails with ErrInvalidArgument, saying why, if
// bad, and else runs set.
func checked(bad bool, why string, set func(*config)) Option {
	return func(c *config) error {
		if bad {
			return fmt.Errorf("%s: %w", why, ErrInvalidArgument)
		}
		set(c)
		return nil
	}
}

// option is an Option that cannot fail.
func option(set func(*config)) Option { return checked(false, "", set) }

// WithSessionTimeout sets the session timeout asked of the server (default
// 10s). The server clamps it to [2, 20] ticks; the negotiated value is what
// the local timer uses. Values below 100ms are invalid.
func WithSessionTimeout(d time.Duration) Option {
	return checked(d < 100*time.Millisecond, fmt.Sprintf("session timeout %v is below 100ms", d), func(c *config) { c.sessionTimeout = d })
}

// WithLogger sets the logger (default zap.NewNop(): silent). go-zookeeper's
// own log lines are routed through it at Debug level. nil is invalid.
func WithLogger(l *zap.Logger) Option {
	return checked(l == nil, "nil logger", func(c *config) { c.logger = l })
}

// WithDigestAuth adds digest credentials (default: none), sent at the start
// of every ZooKeeper session before it is handed out. After a refusal the
// session opens another after a backoff (250 ms doubling to 30 s), and
// Connect's errors, and those of calls waiting for a session, match
// ErrAuthFailed. An empty user is invalid. The password is never logged.
func WithDigestAuth(user, password string) Option {
	return checked(user == "", "digest auth needs a user name", func(c *config) { c.digest = append(c.digest, user+":"+password) })
}

// WithDialer sets how TCP connections to the servers are made, for TLS or a
// proxy (default: net.DialTimeout). nil is invalid.
func WithDialer(d zk.Dialer) Option {
	return checked(d == nil, "nil dialer", func(c *config) { c.dialer = d })
}

// WithNamespace prefixes every path with ns, a chroot that callers never see
// (default: none). ns must be a valid path (see ErrInvalidArgument) other
// than "/".
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

// WithRetry sets how idempotent requests (reads, deletes, versioned sets,
// plain creates) are retried on connection loss: backoff from base
// doubling to max, with jitter, at most maxAttempts attempts (0: bounded
// only by the context and the epoch). Sequential creates and multis are
// never retried. Default WithRetry(20*time.Millisecond, time.Second, 0).
func WithRetry(base, max time.Duration, maxAttempts int) Option {
	why := fmt.Sprintf("retry: base %v, max %v, maxAttempts %d: needs 0 < base <= max and maxAttempts >= 0", base, max, maxAttempts)
	return checked(base <= 0 || max < base || maxAttempts < 0, why, func(c *config) {
		c.retry = retryPolicy{BaseDelay: base, MaxDelay: max, MaxAttempts: maxAttempts}
	})
}

// WithACL sets the ACL of the nodes the recipes create (default
// zk.WorldACL(zk.PermAll)). Lock nodes, unless revocable, get it sealed:
// without WRITE and ADMIN, plus ALL for the session's own random digest
// identity, so that only their session can change them. An empty ACL is
// invalid.
func WithACL(acl []zk.ACL) Option {
	return checked(len(acl) == 0, "empty ACL", func(c *config) { c.acl = append([]zk.ACL(nil), acl...) })
}

// WithSuspendedAsLost is the error policy: a lock holder is told its lock
// is lost as soon as the connection is Suspended. Default (without it):
// only when the epoch ends (Lost), which the default quorum timer signals
// before the server can expire the session (see WithLastHeardTimer).
func WithSuspendedAsLost() Option {
	return option(func(c *config) { c.suspendedAsLost = true })
}

// WithLastHeardTimer replaces the default quorum timer (a sync every T/12;
// the epoch ends 7T/12 after the last one the leader answered) with the
// last-heard timer: the epoch ends T after the last byte heard from the
// server. It sends nothing extra and never gives up a session the server
// kept, but the server may expire the session first, and a server cut off
// from its quorum that still answers pings keeps the timer from starting.
func WithLastHeardTimer() Option {
	return option(func(c *config) { c.quorumTimer = false })
}
