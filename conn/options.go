package conn

import (
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/metrics"
)

// Option configures a Session; Connect rejects invalid ones, and one
// given twice (ErrInvalidArgument), as the recipes refuse a repeated
// lock.Option: a second WithMetrics or WithSessionTimeout would silently
// replace the first.
type Option func(*config) error

type config struct {
	given           []string // the options applied, by name (see give)
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

// checked is the Option name that fails with ErrInvalidArgument if bad or
// given before, else sets.
func checked(name string, bad bool, why string, set func(*config)) Option {
	return func(c *config) error {
		if bad {
			return fmt.Errorf("%s: %w", why, ErrInvalidArgument)
		}
		if err := c.give(name); err != nil {
			return err
		}
		set(c)
		return nil
	}
}

// option is the Option name, which fails only when given before.
func option(name string, set func(*config)) Option { return checked(name, false, "", set) }

// give records option name as applied, or fails if it was already.
func (c *config) give(name string) error {
	if slices.Contains(c.given, name) {
		return fmt.Errorf("%s given twice: %w", name, ErrInvalidArgument)
	}
	c.given = append(c.given, name)
	return nil
}

// optionName is the name of what o sets ("conn.WithLogger"), "" if o is
// nil or invalid.
func optionName(o any) string {
	var c config
	if op, ok := o.(Option); !ok || op == nil || op(&c) != nil || len(c.given) != 1 {
		return ""
	}
	return c.given[0]
}

func init() { connlink.OptionName = optionName }

// WithSessionTimeout sets the session timeout asked of the server (default
// 10s, at least 100ms); the server clamps it to [2, 20] ticks.
func WithSessionTimeout(d time.Duration) Option {
	return checked("conn.WithSessionTimeout", d < 100*time.Millisecond, fmt.Sprintf("session timeout %v is below 100ms", d),
		func(c *config) { c.sessionTimeout = d })
}

// WithLogger sets the logger (default zap.NewNop()); go-zookeeper's log
// lines go to it at Debug level.
func WithLogger(l *zap.Logger) Option {
	return checked("conn.WithLogger", l == nil, "nil logger", func(c *config) { c.logger = l })
}

// WithDigestAuth adds digest credentials (the password is never logged),
// sent at the start of every ZooKeeper session; after a refusal the session
// retries with a backoff, and waiting calls fail matching ErrAuthFailed.
// Each user may be given once; several users add several identities.
func WithDigestAuth(user, password string) Option {
	return checked("conn.WithDigestAuth("+user+")", user == "", "digest auth needs a user name",
		func(c *config) { c.digest = append(c.digest, user+":"+password) })
}

// WithDialer sets how TCP connections are made, for TLS or a proxy
// (default: net.DialTimeout).
func WithDialer(d zk.Dialer) Option {
	return checked("conn.WithDialer", d == nil, "nil dialer", func(c *config) { c.dialer = d })
}

// WithNamespace prefixes every path with ns, a valid path other than "/",
// as a chroot that callers never see.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if ns == "/" {
			return fmt.Errorf("namespace: %q is the root, which is no namespace (leave WithNamespace out): %w", ns, ErrInvalidArgument)
		}
		if err := zkpath.Validate(ns); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
		if err := c.give("conn.WithNamespace"); err != nil {
			return err
		}
		c.namespace = ns
		return nil
	}
}

// WithRetry sets how idempotent requests are retried on connection loss:
// backoff from base doubling to max, with jitter, at most maxAttempts
// (0: no limit). Default WithRetry(20*time.Millisecond, time.Second, 0).
func WithRetry(base, max time.Duration, maxAttempts int) Option {
	why := fmt.Sprintf("retry: base %v, max %v, maxAttempts %d: needs 0 < base <= max and maxAttempts >= 0", base, max, maxAttempts)
	return checked("conn.WithRetry", base <= 0 || max < base || maxAttempts < 0, why, func(c *config) {
		c.retry = retryPolicy{BaseDelay: base, MaxDelay: max, MaxAttempts: maxAttempts}
	})
}

// WithACL sets the ACL of the nodes the recipes create (default
// zk.WorldACL(zk.PermAll)). Lock nodes, unless revocable, get it sealed so
// that only their session can change them (WRITE and ADMIN are its own).
func WithACL(acl []zk.ACL) Option {
	return checked("conn.WithACL", len(acl) == 0, "empty ACL", func(c *config) { c.acl = append([]zk.ACL(nil), acl...) })
}

// WithSuspendedAsLost tells a lock holder its lock is lost as soon as the
// connection is Suspended, not only when the epoch ends (Lost).
func WithSuspendedAsLost() Option {
	return option("conn.WithSuspendedAsLost", func(c *config) { c.suspendedAsLost = true })
}

// WithLastHeardTimer replaces the default quorum timer (a sync every T/12)
// with the last-heard timer: the epoch ends T after the last byte heard. It
// sends nothing extra, but the server may expire the session first (docs/safety.md).
func WithLastHeardTimer() Option {
	return option("conn.WithLastHeardTimer", func(c *config) { c.quorumTimer = false })
}
