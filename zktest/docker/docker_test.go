package docker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/zkrecipes/zkrecipes/zktest"
	"github.com/zkrecipes/zkrecipes/zktest/docker"
)

// start starts a docker cluster for t, stopped in t.Cleanup.
func start(t *testing.T, opts ...zktest.Option) *zktest.Cluster {
	t.Helper()
	t0 := time.Now()
	c, err := zktest.Start(context.Background(), append([]zktest.Option{
		zktest.WithDriver(docker.Driver()), zktest.WithBackend(zktest.BackendDocker)}, opts...)...)
	zktest.RequireOrSkip(t, err)
	t.Logf("%s: %d server(s) serving after %v", c.Source(), len(c.Servers()), time.Since(t0).Round(10*time.Millisecond))
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return c
}

func srvr(addr string, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return zktest.FourLetterAt(ctx, addr, "srvr")
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// connect returns a connection that has a session.
func connect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-timeout:
			t.Fatalf("no session with %v in 30s", servers)
		}
	}
}

// containers lists the ids of the containers labelled label=value, stopped ones too.
func containers(t *testing.T, label, value string) []string {
	t.Helper()
	cli, err := testcontainers.NewDockerClientWithOpts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", label+"="+value)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID[:12])
	}
	return ids
}

// TestStandalone: one container serves on 127.0.0.1, keeps its port and
// data across Kill and Restart, freezes under Pause, and Stop removes it.
func TestStandalone(t *testing.T) {
	c := start(t)
	addr := c.Servers()[0]
	if !strings.HasPrefix(addr, "127.0.0.1:") || !strings.HasPrefix(c.Source(), "docker image ") {
		t.Fatalf("Servers()[0] = %q, Source() = %q", addr, c.Source())
	}
	if out, err := srvr(addr, 5*time.Second); err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr = %q, %v; want Mode: standalone", out, err)
	}
	conn := connect(t, c.Servers())
	if _, err := conn.Create(c.Root(), []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if _, err := srvr(addr, time.Second); err == nil {
		t.Fatal("a killed server answers srvr")
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if c.Servers()[0] != addr {
		t.Fatalf("address changed across Restart: %s -> %s", addr, c.Servers()[0])
	}
	if data, _, err := connect(t, c.Servers()).Get(c.Root()); err != nil || string(data) != "kept" {
		t.Fatalf("after Restart: Get = %q, %v; want the node kept", data, err)
	}

	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	if _, err := srvr(addr, 500*time.Millisecond); err == nil {
		t.Fatal("a paused server answers srvr")
	}
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	if _, err := srvr(addr, 5*time.Second); err != nil {
		t.Fatalf("resumed server: %v", err)
	}

	ids := containers(t, "org.zkrecipes.zktest.pid", fmt.Sprint(os.Getpid()))
	if len(ids) == 0 {
		t.Fatal("no container labelled with this test binary's pid")
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := containers(t, "org.zkrecipes.zktest.pid", fmt.Sprint(os.Getpid())); len(left) != 0 {
		t.Fatalf("containers %v left after Stop (had %v)", left, ids)
	}
}

// TestEnsemble: three containers on their own network elect a leader; when
// it is killed another takes over; it comes back as a follower; a paused
// follower is out until resumed.
func TestEnsemble(t *testing.T) {
	c := start(t, zktest.WithServers(3))
	leader, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, c.Servers())
	if _, err := conn.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := c.Leader()
	if err != nil || next == leader {
		t.Fatalf("after killing leader %d: Leader() = %d, %v", leader, next, err)
	}
	if _, _, err := conn.Get(c.Root()); err != nil {
		t.Fatalf("get after leader change: %v", err)
	}
	if err := c.Restart(leader); err != nil {
		t.Fatal(err)
	}
	if out, err := c.FourLetter(ctx, leader, "srvr"); err != nil || !strings.Contains(out, "Mode: follower") {
		t.Fatalf("restarted server: srvr = %q, %v; want Mode: follower", out, err)
	}
	follower := (next + 1) % 3
	if err := c.Pause(follower); err != nil {
		t.Fatal(err)
	}
	if _, err := srvr(c.Servers()[follower], 500*time.Millisecond); err == nil {
		t.Fatal("a paused server answers srvr")
	}
	if err := c.Resume(follower); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWithoutDigestAuth: the option reaches the container's java.
func TestWithoutDigestAuth(t *testing.T) {
	c := start(t, zktest.WithoutDigestAuth())
	conn := connect(t, c.Servers())
	err := conn.AddAuth("digest", []byte("u:p"))
	if err == nil {
		t.Fatal("AddAuth(digest) succeeded on a server without digest auth")
	}
}

// TestMissingImage: an image neither present nor pullable is ErrImageNotFound.
func TestMissingImage(t *testing.T) {
	t.Setenv("ZK_IMAGE", "zkrecipes/no-such-image:0")
	t.Setenv("ZK_PULL", "never")
	_, err := zktest.Start(context.Background(), zktest.WithDriver(docker.Driver()), zktest.WithBackend(zktest.BackendDocker))
	if errors.Is(err, zktest.ErrDockerUnavailable) {
		zktest.RequireOrSkip(t, err)
	}
	if !errors.Is(err, zktest.ErrImageNotFound) || !strings.Contains(err.Error(), "zk-image.sh") {
		t.Fatalf("Start = %v, want ErrImageNotFound saying zk-image.sh", err)
	}
}

const orphanHelperEnv = "ZKTEST_DOCKER_ORPHAN_HELPER"

// TestOrphanHelper is not a test: TestNoOrphans runs it in a child test
// binary that starts a cluster, prints its address and waits to be killed.
func TestOrphanHelper(t *testing.T) {
	if os.Getenv(orphanHelperEnv) == "" {
		t.Skip("helper process for TestNoOrphans")
	}
	c, err := zktest.Start(context.Background(), zktest.WithDriver(docker.Driver()), zktest.WithBackend(zktest.BackendDocker))
	if err != nil {
		fmt.Printf("UNAVAILABLE %v\n", err)
		os.Exit(0)
	}
	fmt.Printf("SERVER %s\n", c.Servers()[0])
	select {} // until killed
}

// TestNoOrphans kills (SIGKILL) a test binary that runs a docker cluster:
// its container outlives it, and is gone once the next cluster has started
// (the label reaper; Ryuk, where it runs, removes it even sooner).
func TestNoOrphans(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$")
	cmd.Env = append(os.Environ(), orphanHelperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var addr string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "SERVER "); ok {
			addr = rest
			break
		}
		if strings.HasPrefix(line, "UNAVAILABLE ") {
			zktest.RequireOrSkip(t, errors.New(line))
		}
	}
	if addr == "" {
		t.Fatalf("helper printed no address (scan: %v)", sc.Err())
	}
	pid := fmt.Sprint(cmd.Process.Pid)
	if _, err := srvr(addr, 5*time.Second); err != nil {
		t.Fatalf("helper's server does not answer: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	left := containers(t, "org.zkrecipes.zktest.pid", pid)
	t.Logf("helper (pid %s) killed with SIGKILL; its containers: %v; %s still answers srvr: %v",
		pid, left, addr, answers(addr))

	start(t) // the next run: reaps the dead helper's containers first
	left = containers(t, "org.zkrecipes.zktest.pid", pid)
	t.Logf("after the next cluster started: containers of pid %s: %v; %s answers srvr: %v", pid, left, addr, answers(addr))
	if len(left) != 0 || answers(addr) {
		t.Fatalf("the killed test binary's container is still there: %v", left)
	}
}

func answers(addr string) bool {
	_, err := srvr(addr, time.Second)
	return err == nil
}
