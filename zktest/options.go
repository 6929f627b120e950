package zktest

import (
	"fmt"
	"time"
)

// Backend names where the ZooKeeper servers of a Cluster come from.
type Backend string

// The backends, in the order Start tries them unless WithBackend or the
// ZK_BACKEND environment variable forces one (docker is tried a second
// time, pulling the image, after local: see the package documentation).
const (
	// BackendExternal uses the servers listed in ZK_SERVERS (comma-separated
	// host:port). They are shared: no fault controls, and tests stay apart
	// only through Root.
	BackendExternal Backend = "external"
	// BackendDocker runs one container per server from ZK_IMAGE (default
	// DefaultImage), through the Driver passed with WithDriver; without
	// one it is unavailable. A missing image is pulled unless ZK_PULL=never.
	BackendDocker Backend = "docker"
	// BackendLocal runs each server as a child java process, from
	// ZOOKEEPER_HOME or Debian's zookeeper package.
	BackendLocal Backend = "local"
)

// DefaultImage is the Docker image used when ZK_IMAGE is not set.
const DefaultImage = "zookeeper:3.9"

// Defaults.
const (
	defaultTickTime = 500 * time.Millisecond
	localReady      = 30 * time.Second // readiness timeout of a java process
)

// Option configures Start and New. Each option documents its default and
// what an invalid value does (Start fails with ErrBadOption; a nil Option
// too). The form, func(*config) error, is every package's of this module.
type Option func(*config) error

type config struct {
	servers  int
	backend  Backend // "" = choose
	tickTime time.Duration
	noDigest bool   // WithoutDigestAuth
	driver   Driver // WithDriver; nil: no docker backend
}

func defaultConfig() config {
	return config{servers: 1, tickTime: defaultTickTime}
}

func badOption(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadOption}, args...)...)
}

// WithServers sets the number of servers: 1 (the default, a standalone
// server) or 3 (an ensemble). Any other value makes Start fail with
// ErrBadOption.
func WithServers(n int) Option {
	return func(c *config) error {
		if n != 1 && n != 3 {
			return badOption("WithServers(%d): want 1 or 3", n)
		}
		c.servers = n
		return nil
	}
}

// WithBackend forces a backend instead of choosing the first one available.
// It takes precedence over ZK_BACKEND. An unknown backend makes Start fail
// with ErrBadOption; an unavailable one makes it fail with the reason
// (ErrDockerUnavailable, ErrImageNotFound, ErrLocalUnavailable).
func WithBackend(b Backend) Option {
	return func(c *config) error {
		if !b.valid() {
			return badOption("WithBackend(%q): want %q, %q or %q", b, BackendExternal, BackendDocker, BackendLocal)
		}
		c.backend = b
		return nil
	}
}

// WithTickTime sets ZooKeeper's tickTime, default 500ms. The server accepts
// session timeouts from 2 to 20 ticks, so the default allows sessions of
// 1–10 s. A value below 1ms or not a whole number of milliseconds makes
// Start fail with ErrBadOption. It has no effect on an external ensemble.
func WithTickTime(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond || d%time.Millisecond != 0 {
			return badOption("WithTickTime(%v): want a whole number of milliseconds ≥ 1ms", d)
		}
		c.tickTime = d
		return nil
	}
}

// WithoutDigestAuth makes the servers refuse digest credentials: every
// AddAuth("digest", ...) is answered AUTHFAILED and its connection closed
// (zookeeper.DigestAuthenticationProvider.enabled=false), for tests of a
// client that meets such a server. The local and docker backends support
// it; Start fails with ErrUnsupported on an external one.
func WithoutDigestAuth() Option {
	return func(c *config) error {
		c.noDigest = true
		return nil
	}
}

func (b Backend) valid() bool {
	return b == BackendExternal || b == BackendDocker || b == BackendLocal
}
