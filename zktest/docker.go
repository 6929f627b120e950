package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// labelCluster marks every container and network zktest creates, with the
// cluster's id as value. Leftovers of a killed test binary can be removed with
//
//	docker rm -f $(docker ps -aq --filter label=org.zkrecipes.zktest)
//	docker network prune --filter label=org.zkrecipes.zktest
const labelCluster = "org.zkrecipes.zktest"

// The docker backend drives the docker command (the Docker CLI, found in
// PATH; DOCKER_HOST and the CLI's contexts apply as to any docker command),
// not a Docker client library: so zktest, and every module that tests with
// it, depends on no Docker module.

// docker runs the docker command with args and returns its standard output,
// trimmed; on failure, an error with its standard error. With ZK_VERBOSE=true
// every command is logged to stderr.
func docker(ctx context.Context, args ...string) (string, error) {
	if verbose() {
		fmt.Fprintf(os.Stderr, "zktest: docker %s\n", strings.Join(args, " "))
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return "", fmt.Errorf("docker %s: %w", args[0], err)
		}
		return "", fmt.Errorf("docker %s: %w: %s", args[0], err, msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// notFound reports whether a docker command failed because the object is
// not there ("No such image", "No such container", "network ... not found").
func notFound(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "no such") || strings.Contains(msg, "not found")
}

// probeDocker checks that a Docker daemon answers and that the image is
// present locally; with pull, a missing image is pulled instead (once, no
// retries: without a registry that fails at once).
func probeDocker(ctx context.Context, pull bool) (candidate, error) {
	image := os.Getenv(envImage)
	if image == "" {
		image = DefaultImage
	}
	if _, err := exec.LookPath("docker"); err != nil {
		return candidate{}, fmt.Errorf("%w: %w", ErrDockerUnavailable, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := docker(pctx, "version", "--format", "{{.Server.Version}}"); err != nil {
		return candidate{}, fmt.Errorf("%w: %w", ErrDockerUnavailable, err)
	}
	source := "docker image " + image
	if _, err := docker(pctx, "image", "inspect", "--format", "{{.Id}}", image); err != nil {
		if !notFound(err) {
			return candidate{}, fmt.Errorf("%w: inspect image %q: %w", ErrDockerUnavailable, image, err)
		}
		build := fmt.Sprintf("without a registry, build one with scripts/zk-image.sh and set %s=zkrecipes/zookeeper:3.8-debian",
			envImage)
		if !pull {
			return candidate{}, fmt.Errorf("%w: image %q is not present locally; %s, or docker pull/load %q",
				ErrImageNotFound, image, build, image)
		}
		if verbose() {
			fmt.Fprintf(os.Stderr, "zktest: pulling %s\n", image)
		}
		if _, err := docker(ctx, "pull", "--quiet", image); err != nil {
			return candidate{}, fmt.Errorf("%w: image %q is not present locally and pulling it failed (%s=never turns pulling off; %s): %w",
				ErrImageNotFound, image, envPull, build, err)
		}
		source += " (pulled)"
	}
	return candidate{
		name:   BackendDocker,
		source: source,
		start: func(ctx context.Context, cfg *config) (driver, []string, error) {
			return startDocker(ctx, cfg, image)
		},
	}, nil
}

// dockerDriver runs one container per server: created and started with
// docker create and docker start; killed, paused and removed with the docker
// command too, without graceful stops.
type dockerDriver struct {
	networkID string   // "" for a single server
	ids       []string // container ids; "" where creation failed
}

func startDocker(ctx context.Context, cfg *config, image string) (_ driver, _ []string, err error) {
	n := cfg.servers
	d := &dockerDriver{ids: make([]string, n)}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.stop(context.Background()))
		}
	}()
	ports, err := freePorts(n)
	if err != nil {
		return nil, nil, err
	}
	reapOrphans(ctx)
	id := randomHex(6)
	labels := map[string]string{labelCluster: id}
	for k, v := range ownerLabels() {
		labels[k] = v
	}

	tick := int(cfg.tickTime / time.Millisecond)
	initLimit, syncLimit := limits(cfg.tickTime)
	env := map[string]string{
		"ZOO_TICK_TIME":              strconv.Itoa(tick),
		"ZOO_INIT_LIMIT":             strconv.Itoa(initLimit),
		"ZOO_SYNC_LIMIT":             strconv.Itoa(syncLimit),
		"ZOO_4LW_COMMANDS_WHITELIST": "*",
		"ZOO_ADMINSERVER_ENABLED":    "false",
		// Tests and benchmarks open many sessions, and through Docker's
		// port mapping they all come from one address.
		"ZOO_MAX_CLIENT_CNXNS": "0",
	}
	if cfg.noDigest {
		// Both the official image and ours pass JVMFLAGS to java.
		env["JVMFLAGS"] = "-Xms32m -Xmx256m -XX:+UseSerialGC -Dzookeeper.DigestAuthenticationProvider.enabled=false"
	}
	var netName string
	if n > 1 {
		netName = "zktest-" + id
		args := append([]string{"network", "create", "--driver", "bridge"}, flagPairs("--label", labels)...)
		d.networkID, err = docker(ctx, append(args, netName)...)
		if err != nil {
			return nil, nil, fmt.Errorf("zktest: docker: create network: %w", err)
		}
		var servers []string
		for i := 1; i <= n; i++ {
			servers = append(servers, fmt.Sprintf("server.%d=zk%d:2888:3888;2181", i, i))
		}
		env["ZOO_SERVERS"] = strings.Join(servers, " ")
		env["ZOO_STANDALONE_ENABLED"] = "false"
	}

	// Create the containers in parallel: an ensemble forms once all run.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			host := fmt.Sprintf("zk%d", i+1)
			args := []string{"create",
				"--name", fmt.Sprintf("zktest-%s-%s", id, host),
				"--hostname", host,
				"--publish", fmt.Sprintf("127.0.0.1:%d:2181/tcp", ports[i]),
				"--env", "ZOO_MY_ID=" + strconv.Itoa(i+1),
			}
			args = append(args, flagPairs("--env", env)...)
			args = append(args, flagPairs("--label", labels)...)
			if netName != "" {
				args = append(args, "--network", netName, "--network-alias", host)
			}
			d.ids[i], errs[i] = createContainer(ctx, append(args, image)...)
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	servers := make([]string, n)
	for i, p := range ports {
		servers[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return d, servers, nil
}

// flagPairs returns flag k=v for each entry of m, in key order.
func flagPairs(flag string, m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var args []string
	for _, k := range keys {
		args = append(args, flag, k+"="+m[k])
	}
	return args
}

// createContainer creates a container (docker create args) and starts it,
// and returns its id, also on a failed start so that it can be removed.
func createContainer(ctx context.Context, args ...string) (string, error) {
	name := args[2] // "create", "--name", name
	id, err := docker(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("zktest: docker: create container %s: %w", name, err)
	}
	if _, err := docker(ctx, "start", id); err != nil {
		return id, fmt.Errorf("zktest: docker: start container %s: %w", name, err)
	}
	return id, nil
}

func (d *dockerDriver) kill(ctx context.Context, i int) error {
	if _, err := docker(ctx, "kill", "--signal", "KILL", d.ids[i]); err != nil {
		return err
	}
	// docker wait returns once the container is not running.
	_, err := docker(ctx, "wait", d.ids[i])
	return err
}

func (d *dockerDriver) start(ctx context.Context, i int) error {
	_, err := docker(ctx, "start", d.ids[i])
	return err
}

func (d *dockerDriver) pause(ctx context.Context, i int) error {
	_, err := docker(ctx, "pause", d.ids[i])
	return err
}

func (d *dockerDriver) resume(ctx context.Context, i int) error {
	_, err := docker(ctx, "unpause", d.ids[i])
	return err
}

func (d *dockerDriver) exited(ctx context.Context, i int) error {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := docker(ictx, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}} {{.Name}}", d.ids[i])
	if err != nil {
		return nil // unknown: keep waiting
	}
	f := strings.Fields(out)
	if len(f) == 3 && (f[0] == "exited" || f[0] == "dead") {
		return fmt.Errorf("server %d: container %s exited with code %s", i, f[2], f[1])
	}
	return nil
}

func (d *dockerDriver) diagnose(ctx context.Context, i int) string {
	cmd := exec.CommandContext(ctx, "docker", "logs", "--tail", "40", d.ids[i])
	out, err := cmd.CombinedOutput() // the server logs to both
	if err != nil {
		return ""
	}
	return string(out)
}

func (d *dockerDriver) stop(ctx context.Context) error {
	var errs []error
	for _, id := range d.ids {
		if id == "" {
			continue
		}
		if _, err := docker(ctx, "rm", "--force", "--volumes", id); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("zktest: docker: remove container: %w", err))
		}
	}
	if d.networkID != "" {
		if _, err := docker(ctx, "network", "rm", d.networkID); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("zktest: docker: remove network: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (d *dockerDriver) readyTimeout() time.Duration { return dockerReady }
