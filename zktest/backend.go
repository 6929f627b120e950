package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Environment variables read by Start.
const (
	envServers = "ZK_SERVERS" // comma-separated host:port of an external ensemble
	envBackend = "ZK_BACKEND" // docker, local or external: force a backend
	envPull    = "ZK_PULL"    // "never": do not pull a missing image
	envZKHome  = "ZOOKEEPER_HOME"
	envCI      = "CI"
)

// howToInstall is appended to ErrNoBackend: the commands, fastest first.
const howToInstall = `to get a ZooKeeper, do one of these:
  - install Java and ZooKeeper (fastest: a server starts in about a second):
        sudo apt-get install zookeeper default-jre-headless
    or unpack an Apache ZooKeeper release and export ZOOKEEPER_HOME=/path/to/it;
  - Docker: pass zktest.WithDriver(docker.Driver()), docker being the module ` + driverModule + `;
    with a registry it pulls ` + DefaultImage + ` itself (unless ZK_PULL=never); without one,
    build an image from Debian packages (several minutes), in a checkout of
    github.com/zkrecipes/zkrecipes:
        sudo scripts/zk-image.sh && export ZK_IMAGE=zkrecipes/zookeeper:3.8-debian
  - use an existing ensemble: export ZK_SERVERS=host:port,host:port,...
In a checkout of github.com/zkrecipes/zkrecipes, scripts/prereqs.sh --demo installs a ZooKeeper,
scripts/prereqs.sh all that the project's tests need.`

// candidate is a backend that is available; start starts the servers.
type candidate struct {
	name   Backend
	source string // where the servers come from, for Cluster.Source
	start  func(ctx context.Context, cfg *config) (driver, []string, error)
}

// probes find the backends; tests replace them to check the choice alone.
type probes struct {
	external func(cfg *config) (candidate, error)
	// docker asks the driver (WithDriver) to check the daemon and the
	// image; with pull, it pulls a missing image instead of returning
	// ErrImageNotFound.
	docker func(ctx context.Context, pull bool) (candidate, error)
	local  func() (candidate, error)
}

func systemProbes(cfg *config) probes {
	docker := func(ctx context.Context, pull bool) (candidate, error) { return probeDocker(ctx, cfg, pull) }
	return probes{external: probeExternal, docker: docker, local: probeLocal}
}

// chooseBackend returns the forced backend (WithBackend, else ZK_BACKEND) or
// the first available one: external (ZK_SERVERS), docker with the image
// present, local, docker with the image pulled (unless ZK_PULL=never).
func chooseBackend(ctx context.Context, cfg *config) (candidate, error) {
	return choose(ctx, cfg, systemProbes(cfg))
}

func choose(ctx context.Context, cfg *config, p probes) (candidate, error) {
	forced := cfg.backend
	if forced == "" {
		if env := strings.TrimSpace(os.Getenv(envBackend)); env != "" {
			forced = Backend(strings.ToLower(env))
			if !forced.valid() {
				return candidate{}, fmt.Errorf("%w: %s=%q: want %q, %q or %q", ErrBadOption, envBackend, env,
					BackendExternal, BackendDocker, BackendLocal)
			}
		}
	}
	pull, err := pullAllowed()
	if err != nil {
		return candidate{}, err
	}
	switch forced {
	case BackendExternal:
		return p.external(cfg)
	case BackendDocker:
		return p.docker(ctx, pull)
	case BackendLocal:
		return p.local()
	}

	if os.Getenv(envServers) != "" {
		return p.external(cfg)
	}
	d, derr := p.docker(ctx, false)
	if derr == nil {
		return d, nil
	}
	l, lerr := p.local()
	if lerr == nil {
		return l, nil
	}
	// The last resort, as testcontainers-go does where a registry exists.
	if errors.Is(derr, ErrImageNotFound) {
		if !pull {
			derr = fmt.Errorf("%w (not pulled: %s=never)", derr, envPull)
		} else if d, err := p.docker(ctx, true); err == nil {
			return d, nil
		} else {
			derr = err
		}
	}
	return candidate{}, fmt.Errorf("%w:\n  docker: %w\n  local: %w\n%s", ErrNoBackend, derr, lerr, howToInstall)
}

// pullAllowed reads ZK_PULL: unset, empty or "missing" pull a missing image
// (testcontainers' default), "never" does not.
func pullAllowed() (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv(envPull))); v {
	case "", "missing":
		return true, nil
	case "never":
		return false, nil
	default:
		return false, fmt.Errorf("%w: %s=%q: want \"never\" or \"missing\" (the default)", ErrBadOption, envPull, v)
	}
}
