// Package docker runs zktest's ZooKeeper servers in Docker, through
// testcontainers-go:
//
//	c := zktest.New(t, zktest.WithDriver(docker.Driver()), zktest.WithServers(3))
//
// It is a module of its own: only the modules that import it list
// testcontainers-go and Docker's modules; those that use package zktest alone
// do not.
//
// The image is ZK_IMAGE (default zktest.DefaultImage). A missing image is
// pulled unless ZK_PULL=never; without a registry, build one with
// scripts/zk-image.sh and set ZK_IMAGE=zkrecipes/zookeeper:3.8-debian. The
// Docker host is testcontainers-go's: DOCKER_HOST, the Docker contexts,
// ~/.testcontainers.properties and the TESTCONTAINERS_* variables apply.
// ZK_VERBOSE=true shows testcontainers-go's log on stderr.
//
// # Cleanup after a killed test binary
//
// Stop removes the containers and the network. A test binary killed before
// its cleanup leaves them to one of two reapers:
//
//   - Ryuk, testcontainers-go's reaper container, removes them seconds after
//     the binary dies. It is on by default and needs its image
//     (testcontainers/ryuk) present or pullable.
//   - Where its image cannot be had (no registry), turn Ryuk off with
//     TESTCONTAINERS_RYUK_DISABLED=true: the next cluster this package starts
//     on the machine removes them instead, before it creates its own. Every
//     container and network carries the label org.zkrecipes.zktest and its
//     owner's pid and PID namespace; those of dead owners are removed.
//
// The second runs in either case.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	mnetwork "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/zkrecipes/zkrecipes/internal/zkdriver"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const (
	envImage   = "ZK_IMAGE"
	envVerbose = "ZK_VERBOSE"
	// readyTimeout bounds the wait for a container's server to serve.
	readyTimeout = 60 * time.Second
	clientPort   = "2181/tcp"
)

// ryukImage is the image of Ryuk, testcontainers-go's reaper. The exported
// name is deprecated, but its value is the image testcontainers-go starts.
//
//lint:ignore SA1019 the image Ryuk runs from, which Probe looks for
var ryukImage = testcontainers.ReaperDefaultImage

// Driver returns the driver to pass to zktest.WithDriver.
func Driver() zktest.Driver { return driver{} }

type driver struct{}

func image() string {
	if img := os.Getenv(envImage); img != "" {
		return img
	}
	return zktest.DefaultImage
}

func logger() tclog.Logger {
	if v, _ := strconv.ParseBool(os.Getenv(envVerbose)); v {
		return tclog.Default()
	}
	return tclog.NewNoopLogger()
}

// newClient connects to the Docker host testcontainers-go finds.
func newClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", zktest.ErrDockerUnavailable, err)
	}
	return cli, nil
}

// Probe checks the Docker host and the images (ZooKeeper's, and Ryuk's
// unless it is off); with pull, a missing one is pulled.
func (driver) Probe(ctx context.Context, pull bool) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := newClient(pctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	img := image()
	source := "docker image " + img
	build := fmt.Sprintf("without a registry, build one with scripts/zk-image.sh and set %s=zkrecipes/zookeeper:3.8-debian", envImage)
	pulled, err := present(ctx, cli, img, pull)
	if err != nil {
		return "", fmt.Errorf("%w: image %q: %w (%s)", zktest.ErrImageNotFound, img, err, build)
	}
	if pulled {
		source += " (pulled)"
	}
	if !testcontainers.ReadConfig().RyukDisabled {
		if _, err := present(ctx, cli, ryukImage, pull); err != nil {
			return "", fmt.Errorf("%w: Ryuk, testcontainers-go's reaper: image %q: %w "+
				"(without a registry set TESTCONTAINERS_RYUK_DISABLED=true: the next cluster then removes what a killed test left)",
				zktest.ErrImageNotFound, ryukImage, err)
		}
	}
	return source, nil
}

// present reports whether img had to be pulled; it fails if img is missing
// and pull is false, or the pull fails.
func present(ctx context.Context, cli *testcontainers.DockerClient, img string, pull bool) (pulled bool, err error) {
	_, err = cli.ImageInspect(ctx, img)
	if err == nil {
		return false, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return false, fmt.Errorf("%w: %w", zktest.ErrDockerUnavailable, err)
	}
	if !pull {
		return false, errors.New("not present locally (not pulled: ZK_PULL=never)")
	}
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(logger()))
	if err != nil {
		return false, err
	}
	defer p.Close()
	if err := p.PullImage(ctx, img); err != nil {
		return false, fmt.Errorf("not present locally and pulling it failed (ZK_PULL=never turns pulling off): %w", err)
	}
	return true, nil
}

// servers are the containers of one cluster.
type servers struct {
	cli  *testcontainers.DockerClient
	net  *testcontainers.DockerNetwork // nil for a single server
	ctrs []*testcontainers.DockerContainer
}

func (driver) Start(ctx context.Context, spec zkdriver.Spec) (_ zkdriver.Servers, err error) {
	cli, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	n := len(spec.Ports)
	s := &servers{cli: cli, ctrs: make([]*testcontainers.DockerContainer, n)}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop(context.Background()))
		}
	}()
	reapOrphans(ctx, cli.Client)

	id := randomID()
	labels := map[string]string{labelCluster: id}
	for k, v := range ownerLabels() {
		labels[k] = v
	}
	env := map[string]string{
		"ZOO_TICK_TIME":              strconv.Itoa(int(spec.TickTime / time.Millisecond)),
		"ZOO_INIT_LIMIT":             strconv.Itoa(spec.InitLimit),
		"ZOO_SYNC_LIMIT":             strconv.Itoa(spec.SyncLimit),
		"ZOO_4LW_COMMANDS_WHITELIST": "*",
		"ZOO_ADMINSERVER_ENABLED":    "false",
		// Tests open many sessions, all from one address through the port
		// mapping.
		"ZOO_MAX_CLIENT_CNXNS": "0",
	}
	if spec.NoDigest {
		// Both the official image and ours pass JVMFLAGS to java.
		env["JVMFLAGS"] = "-Xms32m -Xmx256m -XX:+UseSerialGC -Dzookeeper.DigestAuthenticationProvider.enabled=false"
	}
	if n > 1 {
		s.net, err = network.New(ctx, network.WithLabels(labels))
		if err != nil {
			return nil, fmt.Errorf("zktest: docker: create network: %w", err)
		}
		var list []string
		for i := 1; i <= n; i++ {
			list = append(list, fmt.Sprintf("server.%d=zk%d:2888:3888;2181", i, i))
		}
		env["ZOO_SERVERS"] = strings.Join(list, " ")
		env["ZOO_STANDALONE_ENABLED"] = "false"
	}

	// Start the containers in parallel: an ensemble forms once all run.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.ctrs[i], errs[i] = run(ctx, i, id, spec.Ports[i], env, labels, s.net)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// run creates and starts the container of server i, its client port
// published on 127.0.0.1:port (a fixed port: a restarted container keeps it).
func run(ctx context.Context, i int, id string, port int, env, labels map[string]string, nw *testcontainers.DockerNetwork) (*testcontainers.DockerContainer, error) {
	host := fmt.Sprintf("zk%d", i+1)
	myEnv := map[string]string{"ZOO_MY_ID": strconv.Itoa(i + 1)}
	for k, v := range env {
		myEnv[k] = v
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithName(fmt.Sprintf("zktest-%s-%s", id, host)),
		testcontainers.WithEnv(myEnv),
		testcontainers.WithLabels(labels),
		testcontainers.WithExposedPorts(clientPort),
		testcontainers.WithLogger(logger()),
		testcontainers.WithConfigModifier(func(c *container.Config) { c.Hostname = host }),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = mnetwork.PortMap{mnetwork.MustParsePort(clientPort): {{
				HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(port),
			}}}
		}),
	}
	if nw != nil {
		opts = append(opts, network.WithNetwork([]string{host}, nw))
	}
	ctr, err := testcontainers.Run(ctx, image(), opts...)
	if err != nil {
		// Run returns the container, if created, with the error.
		return ctr, fmt.Errorf("zktest: docker: server %d: %w", i, err)
	}
	return ctr, nil
}

func (s *servers) id(i int) string { return s.ctrs[i].GetContainerID() }

func (s *servers) Kill(ctx context.Context, i int) error {
	if _, err := s.cli.ContainerKill(ctx, s.id(i), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return err
	}
	w := s.cli.ContainerWait(ctx, s.id(i), client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
		return nil
	case err := <-w.Error:
		return err
	}
}

func (s *servers) Start(ctx context.Context, i int) error {
	_, err := s.cli.ContainerStart(ctx, s.id(i), client.ContainerStartOptions{})
	return err
}

func (s *servers) Pause(ctx context.Context, i int) error {
	_, err := s.cli.ContainerPause(ctx, s.id(i), client.ContainerPauseOptions{})
	return err
}

func (s *servers) Resume(ctx context.Context, i int) error {
	_, err := s.cli.ContainerUnpause(ctx, s.id(i), client.ContainerUnpauseOptions{})
	return err
}

func (s *servers) Exited(ctx context.Context, i int) error {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.ctrs[i].State(ictx)
	if err != nil {
		return nil // unknown: keep waiting
	}
	if st.Status == container.StateExited || st.Status == container.StateDead {
		return fmt.Errorf("server %d: container exited with code %d", i, st.ExitCode)
	}
	return nil
}

func (s *servers) Diagnose(ctx context.Context, i int) string {
	rc, err := s.ctrs[i].Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "")
}

func (s *servers) Stop(ctx context.Context) error {
	var errs []error
	for _, c := range s.ctrs {
		if c == nil {
			continue
		}
		// No graceful stop: the data goes with the container.
		if err := c.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("zktest: docker: remove container: %w", err))
		}
	}
	if s.net != nil {
		if err := s.net.Remove(ctx); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("zktest: docker: remove network: %w", err))
		}
	}
	errs = append(errs, s.cli.Close())
	return errors.Join(errs...)
}

func (s *servers) ReadyTimeout() time.Duration { return readyTimeout }
