package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"
	"github.com/testcontainers/testcontainers-go"
)

// labelCluster marks every container and network zktest creates, with the
// cluster's id as value. Leftovers of a killed test binary can be removed with
//
//	docker rm -f $(docker ps -aq --filter label=org.zkrecipes.zktest)
//	docker network prune --filter label=org.zkrecipes.zktest
const labelCluster = "org.zkrecipes.zktest"

// The reaper container of testcontainers-go (ryuk) would have to be pulled;
// zktest removes its containers itself.
const envRyukDisabled = "TESTCONTAINERS_RYUK_DISABLED"

// probeDocker checks that a Docker daemon answers and that the image is
// present locally; with pull, a missing image is pulled instead (once, no
// retries: without a registry that fails at once).
func probeDocker(ctx context.Context, pull bool) (_ candidate, err error) {
	image := os.Getenv(envImage)
	if image == "" {
		image = DefaultImage
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return candidate{}, fmt.Errorf("%w: %w", ErrDockerUnavailable, err)
	}
	defer func() {
		if err != nil {
			cli.Close()
		}
	}()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		return candidate{}, fmt.Errorf("%w: %w", ErrDockerUnavailable, err)
	}
	source := "docker image " + image
	if _, _, err := cli.ImageInspectWithRaw(pctx, image); err != nil {
		if !client.IsErrNotFound(err) {
			return candidate{}, fmt.Errorf("%w: inspect image %q: %w", ErrDockerUnavailable, image, err)
		}
		build := fmt.Sprintf("without a registry, build one with scripts/zk-image.sh and set %s=zkrecipes/zookeeper:3.8-debian",
			envImage)
		if !pull {
			return candidate{}, fmt.Errorf("%w: image %q is not present locally; %s, or docker pull/load %q",
				ErrImageNotFound, image, build, image)
		}
		if err := pullImage(ctx, cli, image); err != nil {
			return candidate{}, fmt.Errorf("%w: image %q is not present locally and pulling it failed (%s=never turns pulling off; %s): %w",
				ErrImageNotFound, image, envPull, build, err)
		}
		source += " (pulled)"
	}
	return candidate{
		name:   BackendDocker,
		source: source,
		start: func(ctx context.Context, cfg *config) (driver, []string, error) {
			return startDocker(ctx, cfg, cli, image)
		},
	}, nil
}

// pullImage pulls image and waits until it is stored; the daemon reports
// a failure in the stream, not only in the response.
func pullImage(ctx context.Context, cli *client.Client, ref string) error {
	if verbose() {
		fmt.Fprintf(os.Stderr, "zktest: pulling %s\n", ref)
	}
	rc, err := cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	return jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil)
}

// silenceTestcontainers sets testcontainers-go's package logger once: to
// stderr with ZK_VERBOSE=true, else to nothing. Left alone, it prints a
// banner (the Docker daemon's details) to every `go test -v`.
var silenceTestcontainers = sync.OnceFunc(func() {
	testcontainers.Logger = tcLogger()
})

// tcLogger is the logger zktest gives testcontainers-go: stderr with
// ZK_VERBOSE=true, else nothing.
func tcLogger() testcontainers.Logging {
	if verbose() {
		return log.New(os.Stderr, "testcontainers: ", log.LstdFlags)
	}
	return log.New(io.Discard, "", 0)
}

// dockerDriver runs one container per server. Containers are created and
// started with testcontainers-go; kill, pause and removal go through the
// Docker client directly, without hooks or graceful stops.
type dockerDriver struct {
	cli       *client.Client // closed by stop
	networkID string         // "" for a single server
	ids       []string       // container ids; "" where creation failed
}

func startDocker(ctx context.Context, cfg *config, cli *client.Client, image string) (_ driver, _ []string, err error) {
	if _, ok := os.LookupEnv(envRyukDisabled); !ok {
		os.Setenv(envRyukDisabled, "true")
	}
	silenceTestcontainers()
	n := cfg.servers
	d := &dockerDriver{cli: cli, ids: make([]string, n)}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.stop(context.Background()))
		}
	}()
	ports, err := freePorts(n)
	if err != nil {
		return nil, nil, err
	}
	reapOrphans(ctx, cli)
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
	var netName string
	if n > 1 {
		netName = "zktest-" + id
		resp, err := cli.NetworkCreate(ctx, netName, network.CreateOptions{Driver: "bridge", Labels: labels})
		if err != nil {
			return nil, nil, fmt.Errorf("zktest: docker: create network: %w", err)
		}
		d.networkID = resp.ID
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
			cenv := copyMap(env)
			cenv["ZOO_MY_ID"] = strconv.Itoa(i + 1)
			req := testcontainers.ContainerRequest{
				Image:        image,
				Name:         fmt.Sprintf("zktest-%s-zk%d", id, i+1),
				Hostname:     fmt.Sprintf("zk%d", i+1),
				Env:          cenv,
				Labels:       copyMap(labels), // testcontainers-go adds its own
				ExposedPorts: []string{"2181/tcp"},
				HostConfigModifier: func(hc *container.HostConfig) {
					hc.PortBindings = nat.PortMap{"2181/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(ports[i])}}}
				},
			}
			if netName != "" {
				req.Networks = []string{netName}
				req.NetworkAliases = map[string][]string{netName: {fmt.Sprintf("zk%d", i+1)}}
			}
			d.ids[i], errs[i] = createContainer(ctx, req)
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

// createContainer creates and starts a container with testcontainers-go and
// returns its id, also on a failed start so that it can be removed.
func createContainer(ctx context.Context, req testcontainers.ContainerRequest) (id string, err error) {
	defer func() {
		// testcontainers-go panics when it cannot find a Docker host.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: testcontainers: %v", ErrDockerUnavailable, r)
		}
	}()
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req,
		Started:          true,
		Logger:           tcLogger(),
	})
	if c != nil {
		id = c.GetContainerID()
	}
	if err != nil {
		return id, fmt.Errorf("zktest: docker: start container %s: %w", req.Name, err)
	}
	return id, nil
}

func (d *dockerDriver) kill(ctx context.Context, i int) error {
	if err := d.cli.ContainerKill(ctx, d.ids[i], "KILL"); err != nil {
		return err
	}
	okC, errC := d.cli.ContainerWait(ctx, d.ids[i], container.WaitConditionNotRunning)
	select {
	case <-okC:
		return nil
	case err := <-errC:
		return err
	}
}

func (d *dockerDriver) start(ctx context.Context, i int) error {
	return d.cli.ContainerStart(ctx, d.ids[i], container.StartOptions{})
}

func (d *dockerDriver) pause(ctx context.Context, i int) error {
	return d.cli.ContainerPause(ctx, d.ids[i])
}

func (d *dockerDriver) resume(ctx context.Context, i int) error {
	return d.cli.ContainerUnpause(ctx, d.ids[i])
}

func (d *dockerDriver) exited(ctx context.Context, i int) error {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := d.cli.ContainerInspect(ictx, d.ids[i])
	if err != nil || info.State == nil {
		return nil // unknown: keep waiting
	}
	if info.State.Status == "exited" || info.State.Status == "dead" {
		return fmt.Errorf("server %d: container %s exited with code %d", i, info.Name, info.State.ExitCode)
	}
	return nil
}

func (d *dockerDriver) diagnose(ctx context.Context, i int) string {
	rc, err := d.cli.ContainerLogs(ctx, d.ids[i], container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "40"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, rc)
	return out.String()
}

func (d *dockerDriver) stop(ctx context.Context) error {
	var errs []error
	for _, id := range d.ids {
		if id == "" {
			continue
		}
		err := d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("zktest: docker: remove container: %w", err))
		}
	}
	if d.networkID != "" {
		if err := d.cli.NetworkRemove(ctx, d.networkID); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("zktest: docker: remove network: %w", err))
		}
	}
	errs = append(errs, d.cli.Close())
	return errors.Join(errs...)
}

func (d *dockerDriver) readyTimeout() time.Duration { return dockerReady }

func copyMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
