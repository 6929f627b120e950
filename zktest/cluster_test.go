package zktest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// backends are those this module runs; the docker backend's tests are in
// the module zktest/docker.
var backends = []zktest.Backend{zktest.BackendLocal}

// TestStandalone exercises one server on each backend: it serves, keeps its
// port and data across Kill and Restart, and freezes under Pause.
func TestStandalone(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			c := start(t, b)
			if got := c.Backend(); got != b {
				t.Fatalf("Backend() = %q, want %q", got, b)
			}
			addr := c.Servers()[0]
			if !strings.HasPrefix(addr, "127.0.0.1:") {
				t.Errorf("Servers()[0] = %q, want 127.0.0.1:port", addr)
			}
			out, err := srvr(addr, 5*time.Second)
			if err != nil || !strings.Contains(out, "Mode: standalone") {
				t.Fatalf("srvr = %q, %v; want Mode: standalone", out, err)
			}
			if i, err := c.Leader(); err != nil || i != 0 {
				t.Fatalf("Leader() = %d, %v; want 0", i, err)
			}
			m, err := c.Mntr(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := m["zk_packets_sent"]; !ok {
				t.Errorf("mntr has no zk_packets_sent: %v", m)
			}

			// A persistent node must survive Kill+Restart (same data dir).
			conn, _ := connect(t, c.Servers(), 4*time.Second, nil)
			path := c.Root()
			if _, err := conn.Create(path, []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			conn.Close()

			if err := c.Kill(0); err != nil {
				t.Fatal(err)
			}
			if out, err := srvr(addr, time.Second); err == nil {
				t.Fatalf("killed server answered srvr: %q", out)
			}
			begin := time.Now()
			if err := c.Restart(0); err != nil {
				t.Fatal(err)
			}
			t.Logf("restart took %v", time.Since(begin).Round(time.Millisecond))
			if c.Servers()[0] != addr {
				t.Fatalf("address changed across restart: %s -> %s", addr, c.Servers()[0])
			}
			if out, err := srvr(addr, 5*time.Second); err != nil || !strings.Contains(out, "Mode:") {
				t.Fatalf("srvr after restart = %q, %v", out, err)
			}
			conn2, _ := connect(t, c.Servers(), 10*time.Second, nil) // outlives the pause below
			data, _, err := conn2.Get(path)
			if err != nil || string(data) != "kept" {
				t.Fatalf("Get(%s) after restart = %q, %v; want \"kept\"", path, data, err)
			}

			if err := c.Pause(0); err != nil {
				t.Fatal(err)
			}
			if out, err := srvr(addr, time.Second); err == nil {
				t.Fatalf("paused server answered srvr: %q", out)
			}
			if err := c.Resume(0); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.WaitServing(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := conn2.Sync("/"); err != nil {
				t.Fatalf("request after resume: %v", err)
			}
		})
	}
}

// TestEnsemble starts three servers on each backend, kills the leader and
// checks that another server takes over, then brings the old leader back.
func TestEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("ensembles are slow; skipped in -short mode")
	}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			c := start(t, b, zktest.WithServers(3))
			if n := len(c.Servers()); n != 3 {
				t.Fatalf("%d servers, want 3", n)
			}
			leader, err := c.Leader()
			if err != nil {
				t.Fatal(err)
			}
			modes := map[string]int{}
			for i := range c.Servers() {
				m, err := c.Mntr(context.Background(), i)
				if err != nil {
					t.Fatal(err)
				}
				modes[m["zk_server_state"]]++
			}
			if modes["leader"] != 1 || modes["follower"] != 2 {
				t.Fatalf("server states %v, want 1 leader and 2 followers", modes)
			}

			conn, _ := connect(t, c.Servers(), 4*time.Second, nil)
			if _, err := conn.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}

			if err := c.Kill(leader); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			begin := time.Now()
			if err := c.WaitServing(ctx); err != nil {
				t.Fatal(err)
			}
			next, err := c.Leader()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("leader %d killed; server %d leads after %v", leader, next, time.Since(begin).Round(time.Millisecond))
			if next == leader {
				t.Fatalf("killed server %d still reported as leader", leader)
			}
			if _, _, err := conn.Get(c.Root()); err != nil {
				t.Fatalf("get after leader change: %v", err)
			}

			begin = time.Now()
			if err := c.Restart(leader); err != nil {
				t.Fatal(err)
			}
			t.Logf("old leader back after %v", time.Since(begin).Round(time.Millisecond))
			if err := c.WaitServing(ctx); err != nil {
				t.Fatal(err)
			}
			out, err := c.FourLetter(ctx, leader, "srvr")
			if err != nil || !strings.Contains(out, "Mode: follower") {
				t.Fatalf("restarted server: srvr = %q, %v; want Mode: follower", out, err)
			}
		})
	}
}

func TestOptionsInvalid(t *testing.T) {
	for name, opt := range map[string]zktest.Option{
		"servers=2":   zktest.WithServers(2),
		"servers=0":   zktest.WithServers(0),
		"backend=foo": zktest.WithBackend("foo"),
		"tick=0":      zktest.WithTickTime(0),
		"tick=1.5ms":  zktest.WithTickTime(1500 * time.Microsecond),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := zktest.Start(context.Background(), opt)
			if !errors.Is(err, zktest.ErrBadOption) {
				if c != nil {
					c.Stop()
				}
				t.Fatalf("Start = %v, want ErrBadOption", err)
			}
		})
	}
}

func TestEnvBackendInvalid(t *testing.T) {
	t.Setenv("ZK_BACKEND", "podman")
	if _, err := zktest.Start(context.Background()); !errors.Is(err, zktest.ErrBadOption) {
		t.Fatalf("Start with ZK_BACKEND=podman = %v, want ErrBadOption", err)
	}
}

func TestMissingPrerequisites(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		t.Setenv("ZOOKEEPER_HOME", t.TempDir())
		_, err := zktest.Start(context.Background(), zktest.WithBackend(zktest.BackendLocal))
		if !errors.Is(err, zktest.ErrLocalUnavailable) {
			t.Fatalf("Start = %v, want ErrLocalUnavailable", err)
		}
	})
	t.Run("docker", func(t *testing.T) {
		_, err := zktest.Start(context.Background(), zktest.WithBackend(zktest.BackendDocker))
		if !errors.Is(err, zktest.ErrDockerUnavailable) || !strings.Contains(err.Error(), "WithDriver") {
			t.Fatalf("Start without a driver = %v, want ErrDockerUnavailable saying WithDriver", err)
		}
	})
	t.Run("none", func(t *testing.T) {
		t.Setenv("ZOOKEEPER_HOME", t.TempDir())
		t.Setenv("ZK_IMAGE", "zkrecipes/no-such-image:0")
		t.Setenv("ZK_SERVERS", "")
		t.Setenv("ZK_BACKEND", "")
		_, err := zktest.Start(context.Background())
		if !errors.Is(err, zktest.ErrNoBackend) || !errors.Is(err, zktest.ErrLocalUnavailable) {
			t.Fatalf("Start = %v, want ErrNoBackend wrapping ErrLocalUnavailable", err)
		}
		for _, hint := range []string{"zk-image.sh", "apt-get install zookeeper", "ZOOKEEPER_HOME", "ZK_SERVERS"} {
			if !strings.Contains(err.Error(), hint) {
				t.Errorf("error does not mention %q: %v", hint, err)
			}
		}
	})
}

// TestExternal uses a cluster started here as the "external" ensemble.
func TestExternal(t *testing.T) {
	real := anyCluster(t)
	t.Setenv("ZK_SERVERS", strings.Join(real.Servers(), ","))
	t.Setenv("ZK_BACKEND", "")

	a, err := zktest.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := zktest.Start(context.Background(), zktest.WithBackend(zktest.BackendExternal))
	if err != nil {
		t.Fatal(err)
	}
	if a.Backend() != zktest.BackendExternal || b.Backend() != zktest.BackendExternal {
		t.Fatalf("backends %q, %q; want external", a.Backend(), b.Backend())
	}
	if a.Root() == b.Root() || !strings.HasPrefix(a.Root(), "/zktest-") {
		t.Fatalf("roots %q and %q: want distinct /zktest-... paths", a.Root(), b.Root())
	}
	if got := strings.Join(a.Servers(), ","); got != strings.Join(real.Servers(), ",") {
		t.Fatalf("Servers() = %s, want %v", got, real.Servers())
	}
	for name, op := range map[string]func(int) error{"Kill": a.Kill, "Restart": a.Restart, "Pause": a.Pause, "Resume": a.Resume} {
		if err := op(0); !errors.Is(err, zktest.ErrUnsupported) {
			t.Errorf("%s = %v, want ErrUnsupported", name, err)
		}
	}
	if _, err := zktest.Start(context.Background(), zktest.WithServers(3)); !errors.Is(err, zktest.ErrUnsupported) {
		t.Errorf("3 servers from a 1-server ZK_SERVERS: %v, want ErrUnsupported", err)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := srvr(real.Servers()[0], 5*time.Second); err != nil {
		t.Fatalf("Stop of an external cluster touched the servers: %v", err)
	}
}

func TestServerIndex(t *testing.T) {
	c := anyCluster(t)
	if err := c.Kill(1); !errors.Is(err, zktest.ErrNoServer) {
		t.Errorf("Kill(1) = %v, want ErrNoServer", err)
	}
	if _, err := c.FourLetter(context.Background(), -1, "srvr"); !errors.Is(err, zktest.ErrNoServer) {
		t.Errorf("FourLetter(-1) = %v, want ErrNoServer", err)
	}
	if out, err := zktest.FourLetterAt(context.Background(), c.Servers()[0], "ruok"); err != nil || out != "imok" {
		t.Errorf("FourLetterAt ruok = %q, %v; want imok", out, err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop = %v, want nil", err)
	}
	if err := c.Kill(0); !errors.Is(err, zktest.ErrStopped) {
		t.Errorf("Kill after Stop = %v, want ErrStopped", err)
	}
}
