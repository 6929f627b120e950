// Package zkdriver is the contract between package zktest and the driver
// modules of this repository (zktest/docker): a driver runs ZooKeeper
// servers where zktest cannot by itself. zktest.Driver embeds Driver.
package zkdriver

import (
	"context"
	"time"
)

// Spec is what to start.
type Spec struct {
	// Ports are the client ports to publish on 127.0.0.1, one per server
	// (1 or 3), the same across Kill and Start.
	Ports                []int
	TickTime             time.Duration // zoo.cfg's, as InitLimit and SyncLimit
	InitLimit, SyncLimit int
	NoDigest             bool // zookeeper.DigestAuthenticationProvider.enabled=false
}

// Driver starts servers. Its errors wrap zktest's sentinels where they apply
// (ErrDockerUnavailable, ErrImageNotFound).
type Driver interface {
	// Probe checks that servers can be started, and returns where they
	// come from ("docker image NAME"). With pull, a missing image is
	// pulled; without, it is ErrImageNotFound.
	Probe(ctx context.Context, pull bool) (source string, err error)
	// Start starts len(spec.Ports) servers without waiting for them to
	// serve. On error, nothing it created is left.
	Start(ctx context.Context, spec Spec) (Servers, error)
}

// Servers are running servers, indexed from 0. zktest serialises the calls
// and calls Kill only on a running server, Resume only on a paused one.
type Servers interface {
	Kill(ctx context.Context, i int) error   // SIGKILL; returns once the server is down
	Start(ctx context.Context, i int) error  // start a killed server again, same port and data
	Pause(ctx context.Context, i int) error  // freeze (SIGSTOP, cgroup freezer)
	Resume(ctx context.Context, i int) error // unfreeze
	// Exited returns an error if server i is known to be down although it
	// should run (for failing fast while waiting for it).
	Exited(ctx context.Context, i int) error
	Diagnose(ctx context.Context, i int) string // the tail of server i's log, or ""
	Stop(ctx context.Context) error             // remove everything; called once
	ReadyTimeout() time.Duration
}
