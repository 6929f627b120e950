package zktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// driver is what a backend does to its servers. The Cluster serialises calls
// to it (Cluster.mu) and tracks the state of each server.
type driver interface {
	kill(ctx context.Context, i int) error   // SIGKILL; returns once the server is down
	start(ctx context.Context, i int) error  // start a killed server again, same port and data
	pause(ctx context.Context, i int) error  // SIGSTOP
	resume(ctx context.Context, i int) error // SIGCONT
	// exited returns a non-nil error if server i is known to be down
	// although it should run (for failing fast while waiting for it).
	exited(ctx context.Context, i int) error
	// diagnose returns the tail of server i's log, or "".
	diagnose(ctx context.Context, i int) string
	stop(ctx context.Context) error // remove everything; called once
	readyTimeout() time.Duration
}

// serverState is what the Cluster last did to a server.
type serverState int

const (
	running serverState = iota
	paused
	killed
)

// Cluster is a ZooKeeper standalone server or ensemble for tests. Its methods
// are safe for concurrent use.
type Cluster struct {
	backend Backend
	source  string
	servers []string // client addresses; fixed for the life of the cluster
	root    string
	drv     driver

	mu      sync.Mutex    // guards state and stopped; held across driver calls
	state   []serverState // per server
	stopped bool

	stopOnce sync.Once
	stopErr  error
}

// Start starts a ZooKeeper cluster (by default one server) and returns once
// every server answers `srvr` and, for an ensemble, one of them is leader.
// Call Stop when done. Start picks the backend as described in the package
// documentation; ctx bounds the whole start.
func Start(ctx context.Context, opts ...Option) (*Cluster, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, badOption("nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, &cfg)
		if err == nil || attempt == startAttempts || !isPortClash(err) || ctx.Err() != nil {
			return c, err
		}
		// Another process took a port between freePorts and the server's
		// bind: try again with new ports.
	}
}

// startAttempts bounds the retries of Start after a port clash.
const startAttempts = 3

func start(ctx context.Context, cfg *config) (*Cluster, error) {
	b, err := chooseBackend(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.noDigest && b.name != BackendLocal && b.name != BackendDocker {
		return nil, fmt.Errorf("zktest: WithoutDigestAuth: %w (%s)", ErrUnsupported, b.name)
	}
	drv, servers, err := b.start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		backend: b.name,
		source:  b.source,
		servers: servers,
		root:    "/zktest-" + randomHex(8),
		drv:     drv,
		state:   make([]serverState, len(servers)),
	}
	if err := c.waitReady(ctx, b.name != BackendExternal); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// isPortClash reports whether err says a server could not bind its port:
// Docker's "port is already allocated", Java's BindException in the log tail.
func isPortClash(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "already allocated") || strings.Contains(msg, "ddress already in use")
}

// New starts a cluster for the test t, as Start does, and stops it in
// t.Cleanup. If no cluster can be started, New calls t.Fatal with what to
// install; use Start with RequireOrSkip to skip instead.
func New(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("zktest: stop: %v", err)
		}
	})
	t.Logf("zktest: %s, servers %v, root %s", c.source, c.servers, c.root)
	return c
}

// Stop kills every server and removes containers, networks, processes and
// data directories. It is idempotent and returns the first call's error. An
// external ensemble is left untouched (nothing under Root is deleted).
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var errs []error
		for i, s := range c.state {
			if s == paused { // a frozen process or container may resist removal
				errs = append(errs, c.drv.resume(ctx, i))
			}
		}
		errs = append(errs, c.drv.stop(ctx))
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// Servers returns the client addresses ("127.0.0.1:port" for the docker and
// local backends); index i is server i. They do not change across Kill and
// Restart.
func (c *Cluster) Servers() []string { return append([]string(nil), c.servers...) }

// Root returns a path prefix unique to this cluster, like "/zktest-1f2e3d4c5b6a7988".
// The node is not created; tests create their nodes under it so that tests
// sharing an external ensemble do not collide.
func (c *Cluster) Root() string { return c.root }

// Backend returns the backend the cluster runs on.
func (c *Cluster) Backend() Backend { return c.backend }

// Source says, for people, where the servers come from: "external
// ZK_SERVERS=host:port,...", "docker image NAME" (with " (pulled)" if
// Start pulled it), or "local install at PATH (java PATH)", PATH being
// ZOOKEEPER_HOME or Debian's /usr/share/java/zookeeper.jar.
func (c *Cluster) Source() string { return c.source }

// Kill kills server i at once (SIGKILL, or docker kill): no clean shutdown,
// its sessions stay until they expire. Killing a killed server does nothing.
func (c *Cluster) Kill(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(i, "kill"); err != nil {
		return err
	}
	return c.killLocked(ctx, i)
}

func (c *Cluster) killLocked(ctx context.Context, i int) error {
	switch c.state[i] {
	case killed:
		return nil
	case paused:
		if err := c.drv.resume(ctx, i); err != nil {
			return fmt.Errorf("zktest: kill server %d: resume first: %w", i, err)
		}
		c.state[i] = running
	}
	if err := c.drv.kill(ctx, i); err != nil {
		return fmt.Errorf("zktest: kill server %d: %w", i, err)
	}
	c.state[i] = killed
	return nil
}

// Restart starts server i again with the same client port and data
// directory, killing it first if it still runs, and returns once it answers
// `srvr` with a Mode: line (60 s limit for docker, 30 s for local).
func (c *Cluster) Restart(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*c.drv.readyTimeout())
	defer cancel()
	c.mu.Lock()
	err := c.check(i, "restart")
	if err == nil {
		err = c.killLocked(ctx, i)
	}
	if err == nil {
		err = c.drv.start(ctx, i)
		if err != nil {
			err = fmt.Errorf("zktest: restart server %d: %w", i, err)
		} else {
			c.state[i] = running
		}
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	wctx, wcancel := context.WithTimeout(ctx, c.drv.readyTimeout())
	defer wcancel()
	return c.waitServer(wctx, i)
}

// Pause freezes server i (SIGSTOP, or docker pause): it keeps its
// connections open but answers nothing. Pausing a paused server does nothing.
func (c *Cluster) Pause(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(i, "pause"); err != nil {
		return err
	}
	switch c.state[i] {
	case paused:
		return nil
	case killed:
		return fmt.Errorf("zktest: pause server %d: it is killed", i)
	}
	if err := c.drv.pause(ctx, i); err != nil {
		return fmt.Errorf("zktest: pause server %d: %w", i, err)
	}
	c.state[i] = paused
	return nil
}

// Resume unfreezes server i (SIGCONT, or docker unpause). Resuming a server
// that is not paused does nothing.
func (c *Cluster) Resume(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(i, "resume"); err != nil {
		return err
	}
	if c.state[i] != paused {
		return nil
	}
	if err := c.drv.resume(ctx, i); err != nil {
		return fmt.Errorf("zktest: resume server %d: %w", i, err)
	}
	c.state[i] = running
	return nil
}

// check validates i and that the cluster can still be changed. c.mu is held.
func (c *Cluster) check(i int, op string) error {
	if c.stopped {
		return fmt.Errorf("zktest: %s server %d: %w", op, i, ErrStopped)
	}
	if i < 0 || i >= len(c.servers) {
		return fmt.Errorf("zktest: %s server %d: %w (the cluster has %d)", op, i, ErrNoServer, len(c.servers))
	}
	if c.backend == BackendExternal {
		return fmt.Errorf("zktest: %s server %d: %w (%s)", op, i, ErrUnsupported, c.backend)
	}
	return nil
}

// live returns the indexes of servers that should answer: not killed, not paused.
func (c *Cluster) live() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var idx []int
	for i, s := range c.state {
		if s == running {
			idx = append(idx, i)
		}
	}
	return idx
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}
