package testzk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// Debian's jars for Curator 5.4 and ZooKeeper 3.8 (libcurator-recipes-java,
// zookeeper).
var curatorJars = []string{"curator-recipes", "curator-framework", "curator-client", "zookeeper",
	"zookeeper-jute", "guava", "slf4j-api", "slf4j-nop", "netty-all"}

// Need fails the test under CI=true and skips it elsewhere when a peer
// library or tool is missing (err != nil); what says which and how to
// install it.
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if zktest.InCI() {
		t.Fatalf("%s is missing: %v (CI=true: a missing prerequisite is a failure, not a skip)", what, err)
	}
	t.Skipf("%s is missing: %v", what, err)
}

// CompileCurator compiles the Java sources against Debian's Curator and
// ZooKeeper jars and returns the classpath that runs them (the jars and the
// compiled classes).
func CompileCurator(t testing.TB, sources ...string) string {
	t.Helper()
	_, err := exec.LookPath("javac")
	Need(t, "javac (apt-get install default-jdk-headless)", err)
	var cp []string
	for _, j := range curatorJars {
		p := filepath.Join("/usr/share/java", j+".jar")
		_, err := os.Stat(p)
		Need(t, "Curator (apt-get install libcurator-recipes-java zookeeper)", err)
		cp = append(cp, p)
	}
	classes := t.TempDir()
	args := append([]string{"-cp", strings.Join(cp, ":"), "-d", classes}, sources...)
	out, err := exec.Command("javac", args...).CombinedOutput()
	require.NoError(t, err, "javac: %s", out)
	return strings.Join(append(cp, classes), ":")
}
