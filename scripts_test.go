package zkrecipes_test

import (
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestZKEnsembleServerLog: the servers scripts/zk-ensemble.sh starts log
// through a real SLF4J binding, so that the server.log its failure message
// points at says what the server did (its quorum role, at least), not
// SLF4J's "no-operation (NOP) logger" warning alone.
func TestZKEnsembleServerLog(t *testing.T) {
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		t.Fatalf("scripts/zk-ensemble.sh runs Debian's ZooKeeper (scripts/prereqs.sh installs it): %v", err)
	}
	port := freePorts(t)
	cmd := exec.Command("bash", "scripts/zk-ensemble.sh", strconv.Itoa(port))
	out, err := cmd.Output()
	dirs, _ := filepath.Glob(fmt.Sprintf("/tmp/zk-ensemble-%d-*", port))
	t.Cleanup(func() {
		for _, p := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	})
	if err != nil {
		t.Fatalf("zk-ensemble.sh %d: %v", port, err)
	}
	if len(dirs) != 1 {
		t.Fatalf("want one /tmp/zk-ensemble-%d-* directory, got %v", port, dirs)
	}
	for n := 1; n <= 3; n++ {
		b, err := os.ReadFile(filepath.Join(dirs[0], fmt.Sprintf("q%d", n), "server.log"))
		if err != nil {
			t.Fatal(err)
		}
		log := string(b)
		if strings.Contains(log, "NOP") || !strings.Contains(log, "QuorumPeer") || !strings.Contains(log, "LEADING") && !strings.Contains(log, "FOLLOWING") {
			t.Errorf("server %d's server.log does not say what it did:\n%s", n, firstLines(log, 10))
		}
	}
}

// freePorts returns a port p such that p..p+2 and p+10..p+15, the
// ensemble's client, quorum and election ports, are free now.
func freePorts(t *testing.T) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		p := 20000 + rand.Intn(20000)
		ok := true
		for _, q := range []int{p, p + 1, p + 2, p + 10, p + 11, p + 12, p + 13, p + 14, p + 15} {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return p
		}
	}
	t.Fatal("no free port range")
	return 0
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
