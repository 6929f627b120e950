package zktest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkdriver"
)

// DriverModule is the module whose package provides the docker backend.
const driverModule = "github.com/zkrecipes/zkrecipes/zktest/docker"

// A Driver runs ZooKeeper servers where package zktest cannot by itself: in
// Docker. The module github.com/zkrecipes/zkrecipes/zktest/docker provides it
// (through testcontainers-go): pass WithDriver(docker.Driver()). It is a
// module of its own so that the modules of those who do not import it list
// nothing of Docker. Only this repository's modules implement Driver.
type Driver interface {
	zkdriver.Driver
}

// WithDriver makes the docker backend available to Start, run by d; without
// it, the docker backend is unavailable (ErrDockerUnavailable). A nil d makes
// Start fail with ErrBadOption.
func WithDriver(d Driver) Option {
	return func(c *config) error {
		if d == nil {
			return badOption("WithDriver(nil)")
		}
		c.driver = d
		return nil
	}
}

// probeDocker asks the driver, if any, whether it can run servers.
func probeDocker(ctx context.Context, cfg *config, pull bool) (candidate, error) {
	d := cfg.driver
	if d == nil {
		return candidate{}, fmt.Errorf("%w: no docker driver: pass zktest.WithDriver(docker.Driver()) from the module %s",
			ErrDockerUnavailable, driverModule)
	}
	source, err := d.Probe(ctx, pull)
	if err != nil {
		return candidate{}, err
	}
	return candidate{
		name:   BackendDocker,
		source: source,
		start: func(ctx context.Context, cfg *config) (driver, []string, error) {
			ports, err := freePorts(cfg.servers)
			if err != nil {
				return nil, nil, err
			}
			initLimit, syncLimit := limits(cfg.tickTime)
			s, err := d.Start(ctx, zkdriver.Spec{
				Ports: ports, TickTime: cfg.tickTime,
				InitLimit: initLimit, SyncLimit: syncLimit,
				NoDigest: cfg.noDigest,
			})
			if err != nil {
				return nil, nil, err
			}
			servers := make([]string, len(ports))
			for i, p := range ports {
				servers[i] = "127.0.0.1:" + strconv.Itoa(p)
			}
			return driverServers{s}, servers, nil
		},
	}, nil
}

// driverServers adapts a driver's Servers to the Cluster.
type driverServers struct{ s zkdriver.Servers }

func (d driverServers) kill(ctx context.Context, i int) error      { return d.s.Kill(ctx, i) }
func (d driverServers) start(ctx context.Context, i int) error     { return d.s.Start(ctx, i) }
func (d driverServers) pause(ctx context.Context, i int) error     { return d.s.Pause(ctx, i) }
func (d driverServers) resume(ctx context.Context, i int) error    { return d.s.Resume(ctx, i) }
func (d driverServers) exited(ctx context.Context, i int) error    { return d.s.Exited(ctx, i) }
func (d driverServers) diagnose(ctx context.Context, i int) string { return d.s.Diagnose(ctx, i) }
func (d driverServers) stop(ctx context.Context) error             { return d.s.Stop(ctx) }
func (d driverServers) readyTimeout() time.Duration                { return d.s.ReadyTimeout() }
