package zktest

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Environment variables read by Start.
const (
	envServers = "ZK_SERVERS" // comma-separated host:port of an external ensemble
	envBackend = "ZK_BACKEND" // docker, local or external: force a backend
	envImage   = "ZK_IMAGE"   // docker image, default DefaultImage
	envZKHome  = "ZOOKEEPER_HOME"
	envCI      = "CI"
)

// howToInstall is appended to ErrNoBackend.
const howToInstall = `to run ZooKeeper for tests, provide one of:
  - Docker, with a ZooKeeper image present locally (zktest never pulls): build one with
    scripts/zk-image.sh from github.com/zkrecipes/zkrecipes and set ZK_IMAGE=zkrecipes/zookeeper:3.8-debian,
    or docker pull ` + DefaultImage + `;
  - Java and ZooKeeper: apt-get install zookeeper (Debian/Ubuntu), or set ZOOKEEPER_HOME
    to an unpacked Apache ZooKeeper release;
  - an existing ensemble: ZK_SERVERS=host:port,host:port,...`

// candidate is a backend that is available; start starts the servers.
type candidate struct {
	name  Backend
	start func(ctx context.Context, cfg *config) (driver, []string, error)
}

// chooseBackend returns the forced backend (WithBackend, else ZK_BACKEND) or
// the first available one: external (ZK_SERVERS), docker, local.
func chooseBackend(ctx context.Context, cfg *config) (candidate, error) {
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
	switch forced {
	case BackendExternal:
		return probeExternal(cfg)
	case BackendDocker:
		return probeDocker(ctx)
	case BackendLocal:
		return probeLocal()
	}

	if os.Getenv(envServers) != "" {
		return probeExternal(cfg)
	}
	d, derr := probeDocker(ctx)
	if derr == nil {
		return d, nil
	}
	l, lerr := probeLocal()
	if lerr == nil {
		return l, nil
	}
	return candidate{}, fmt.Errorf("%w:\n  docker: %w\n  local: %w\n%s", ErrNoBackend, derr, lerr, howToInstall)
}
