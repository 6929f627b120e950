package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// debianJar is the jar of Debian's zookeeper package; its manifest's
// Class-Path names its dependencies.
const debianJar = "/usr/share/java/zookeeper.jar"

// debianLogBinding sends the server's log (SLF4J) to stderr, i.e. to the
// log file of the server, if libslf4j-java provides it.
const debianLogBinding = "/usr/share/java/slf4j-simple.jar"

// jvmFlags keep each server small: tests run several at once on small machines.
var jvmFlags = []string{
	"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
	"-Djava.awt.headless=true",
	"-Dzookeeper.admin.enableServer=false",
	"-Dzookeeper.4lw.commands.whitelist=*",
}

// probeLocal finds java and the ZooKeeper jars.
func probeLocal() (candidate, error) {
	if !localSupported {
		return candidate{}, fmt.Errorf("%w: child processes are not supported on this OS", ErrLocalUnavailable)
	}
	java, err := findJava()
	if err != nil {
		return candidate{}, err
	}
	cp, err := findClasspath()
	if err != nil {
		return candidate{}, err
	}
	install := debianJar
	if home := os.Getenv(envZKHome); home != "" {
		install = home
	}
	return candidate{
		name:   BackendLocal,
		source: fmt.Sprintf("local install at %s (java %s)", install, java),
		start: func(ctx context.Context, cfg *config) (driver, []string, error) {
			return startLocal(ctx, cfg, java, cp)
		},
	}, nil
}

func findJava() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(java); err == nil {
			return java, nil
		}
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: no java in PATH or JAVA_HOME (apt-get install default-jre-headless)", ErrLocalUnavailable)
	}
	return java, nil
}

// findClasspath returns the class path of ZOOKEEPER_HOME if set, else of
// Debian's package.
func findClasspath() (string, error) {
	if home := os.Getenv(envZKHome); home != "" {
		lib, _ := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
		top, _ := filepath.Glob(filepath.Join(home, "*.jar"))
		if len(lib)+len(top) == 0 {
			return "", fmt.Errorf("%w: %s=%s has no lib/*.jar or *.jar", ErrLocalUnavailable, envZKHome, home)
		}
		// conf/ holds the release's logging configuration.
		return strings.Join([]string{
			filepath.Join(home, "conf"), filepath.Join(home, "lib", "*"), filepath.Join(home, "*"),
		}, string(os.PathListSeparator)), nil
	}
	if _, err := os.Stat(debianJar); err != nil {
		return "", fmt.Errorf("%w: no %s and %s is not set (apt-get install zookeeper, or unpack an Apache ZooKeeper release and set %s)",
			ErrLocalUnavailable, debianJar, envZKHome, envZKHome)
	}
	cp := debianJar
	if _, err := os.Stat(debianLogBinding); err == nil {
		cp += string(os.PathListSeparator) + debianLogBinding
	}
	return cp, nil
}

// localDriver runs each server as a child java process in its own process
// group, with its configuration, data and log under dir.
type localDriver struct {
	java      string
	classpath string
	dir       string // removed by stop
	nodes     []*localNode
}

type localNode struct {
	dir  string // zoo.cfg, server.log, data/
	main string // java main class
	proc *process
}

func startLocal(ctx context.Context, cfg *config, java, cp string) (_ driver, _ []string, err error) {
	n := cfg.servers
	ports, err := freePorts(3 * n) // client, quorum, election
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "zktest-")
	if err != nil {
		return nil, nil, fmt.Errorf("zktest: local: %w", err)
	}
	d := &localDriver{java: java, classpath: cp, dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.stop(context.Background()))
		}
	}()

	tick := int(cfg.tickTime / time.Millisecond)
	servers := make([]string, n)
	for i := 0; i < n; i++ {
		servers[i] = "127.0.0.1:" + strconv.Itoa(ports[3*i])
		node := &localNode{dir: filepath.Join(dir, "zk"+strconv.Itoa(i+1))}
		if err := os.MkdirAll(filepath.Join(node.dir, "data"), 0o755); err != nil {
			return nil, nil, fmt.Errorf("zktest: local: %w", err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "tickTime=%d\n", tick)
		fmt.Fprintf(&b, "dataDir=%s\n", filepath.Join(node.dir, "data"))
		fmt.Fprintf(&b, "clientPort=%d\n", ports[3*i])
		b.WriteString("clientPortAddress=127.0.0.1\n")
		b.WriteString("admin.enableServer=false\n")
		b.WriteString("4lw.commands.whitelist=*\n")
		b.WriteString("maxClientCnxns=0\n") // no limit on sessions from one address
		if cfg.noDigest {
			// Unknown keys become system properties "zookeeper.<key>".
			b.WriteString("DigestAuthenticationProvider.enabled=false\n")
		}
		node.main = "org.apache.zookeeper.server.ZooKeeperServerMain"
		if n > 1 {
			node.main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
			initLimit, syncLimit := limits(cfg.tickTime)
			fmt.Fprintf(&b, "initLimit=%d\nsyncLimit=%d\n", initLimit, syncLimit)
			b.WriteString("standaloneEnabled=false\n")
			for j := 0; j < n; j++ {
				fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", j+1, ports[3*j+1], ports[3*j+2])
			}
			if err := os.WriteFile(filepath.Join(node.dir, "data", "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
				return nil, nil, fmt.Errorf("zktest: local: %w", err)
			}
		}
		if err := os.WriteFile(filepath.Join(node.dir, "zoo.cfg"), []byte(b.String()), 0o644); err != nil {
			return nil, nil, fmt.Errorf("zktest: local: %w", err)
		}
		d.nodes = append(d.nodes, node)
	}
	for i := range d.nodes {
		if err := d.start(ctx, i); err != nil {
			return nil, nil, err
		}
	}
	return d, servers, nil
}

// limits returns initLimit and syncLimit in ticks: at least 10 and 5 ticks
// and at least 5 s and 2.5 s, so that a slow JVM start does not break a
// quorum with a short tickTime.
func limits(tick time.Duration) (initLimit, syncLimit int) {
	initLimit = max(10, int((5*time.Second+tick-1)/tick))
	syncLimit = max(5, int((2500*time.Millisecond+tick-1)/tick))
	return initLimit, syncLimit
}

func (d *localDriver) start(_ context.Context, i int) error {
	node := d.nodes[i]
	args := append(append([]string(nil), jvmFlags...), "-cp", d.classpath, node.main, filepath.Join(node.dir, "zoo.cfg"))
	p, err := startProcess(d.java, args, node.dir, filepath.Join(node.dir, "server.log"))
	if err != nil {
		return fmt.Errorf("zktest: local: start server %d: %w", i, err)
	}
	node.proc = p
	return nil
}

func (d *localDriver) kill(ctx context.Context, i int) error {
	p := d.nodes[i].proc
	if p == nil {
		return nil
	}
	if err := p.kill(ctx); err != nil {
		return err
	}
	d.nodes[i].proc = nil
	return nil
}

func (d *localDriver) pause(_ context.Context, i int) error {
	if p := d.nodes[i].proc; p != nil {
		return p.stopSignal()
	}
	return fmt.Errorf("zktest: local: server %d is not running", i)
}

func (d *localDriver) resume(_ context.Context, i int) error {
	if p := d.nodes[i].proc; p != nil {
		return p.contSignal()
	}
	return fmt.Errorf("zktest: local: server %d is not running", i)
}

func (d *localDriver) exited(_ context.Context, i int) error {
	p := d.nodes[i].proc
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return fmt.Errorf("server %d: java exited: %v", i, p.err)
	default:
		return nil
	}
}

func (d *localDriver) diagnose(_ context.Context, i int) string {
	f, err := os.Open(filepath.Join(d.nodes[i].dir, "server.log"))
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 4 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		_, _ = f.Seek(-tail, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

func (d *localDriver) stop(ctx context.Context) error {
	var errs []error
	for i := range d.nodes {
		errs = append(errs, d.kill(ctx, i))
	}
	errs = append(errs, os.RemoveAll(d.dir))
	return errors.Join(errs...)
}

func (d *localDriver) readyTimeout() time.Duration { return localReady }
