// Package zkdriver is the contract between package zktest and the driver
// modules of this repository (zktest/docker): a driver runs ZooKeeper servers
// somewhere zktest cannot by itself, and zktest does the rest (choice of
// backend, ports, readiness, fault bookkeeping). It is internal so that only
// this repository implements it; zktest.Driver embeds Driver.
package zkdriver

import (
	"context"
	"time"
)

// Spec is what to start.
type Spec struct {
	// Ports are the client ports to publish on 127.0.0.1, one per server
	// (len(Ports) is the number of servers, 1 or 3). They must stay the same
	// across Kill and Start.
	Ports []int
	// TickTime, InitLimit and SyncLimit are zoo.cfg's.
	TickTime             time.Duration
	InitLimit, SyncLimit int
	// NoDigest turns off digest authentication
	// (zookeeper.DigestAuthenticationProvider.enabled=false).
	NoDigest bool
}

// Driver starts servers. Its errors wrap zktest's sentinels where they apply
// (ErrDockerUnavailable, ErrImageNotFound).
type Driver interface {
	// Probe checks that servers can be started, and returns where they
	// come from, for people ("docker image NAME"). With pull, a missing
	// image is pulled; without, it is ErrImageNotFound.
	Probe(ctx context.Context, pull bool) (source string, err error)
	// Start starts len(spec.Ports) servers and returns without waiting for
	// them to serve. On error, nothing it created is left.
	Start(ctx context.Context, spec Spec) (Servers, error)
}

// Servers are running servers, indexed from 0. zktest serialises the calls
// and tracks each server's state (it calls Kill only on a running server,
// Resume only on a paused one).
type Servers interface {
	Kill(ctx context.Context, i int) error   // SIGKILL; returns once the server is down
	Start(ctx context.Context, i int) error  // start a killed server again, same port and data
	Pause(ctx context.Context, i int) error  // freeze (SIGSTOP, cgroup freezer)
	Resume(ctx context.Context, i int) error // unfreeze
	// Exited returns a non-nil error if server i is known to be down
	// although it should run (for failing fast while waiting for it).
	Exited(ctx context.Context, i int) error
	// Diagnose returns the tail of server i's log, or "".
	Diagnose(ctx context.Context, i int) string
	Stop(ctx context.Context) error // remove everything; called once
	ReadyTimeout() time.Duration
}
