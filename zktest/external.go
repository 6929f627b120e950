package zktest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// probeExternal reads ZK_SERVERS.
func probeExternal(cfg *config) (candidate, error) {
	var servers []string
	for _, s := range strings.Split(os.Getenv(envServers), ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		return candidate{}, fmt.Errorf("%w: the external backend needs %s (comma-separated host:port)", ErrBadOption, envServers)
	}
	if cfg.servers > len(servers) {
		return candidate{}, fmt.Errorf("%w: %d servers wanted but %s lists %d", ErrUnsupported, cfg.servers, envServers, len(servers))
	}
	return candidate{
		name:   BackendExternal,
		source: "external " + envServers + "=" + strings.Join(servers, ","),
		start: func(context.Context, *config) (driver, []string, error) {
			return externalDriver{}, servers, nil
		},
	}, nil
}

// externalDriver has no control over the servers: the Cluster refuses fault
// operations before reaching it.
type externalDriver struct{}

func (externalDriver) kill(context.Context, int) error      { return ErrUnsupported }
func (externalDriver) start(context.Context, int) error     { return ErrUnsupported }
func (externalDriver) pause(context.Context, int) error     { return ErrUnsupported }
func (externalDriver) resume(context.Context, int) error    { return ErrUnsupported }
func (externalDriver) exited(context.Context, int) error    { return nil }
func (externalDriver) diagnose(context.Context, int) string { return "" }
func (externalDriver) stop(context.Context) error           { return nil }
func (externalDriver) readyTimeout() time.Duration          { return localReady }
