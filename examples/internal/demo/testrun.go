package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// envRunMain makes an example's test binary run the example's main instead
// of its tests: TestHelp runs the binary that way.
const envRunMain = "ZKRECIPES_EXAMPLE_RUN_MAIN"

// RunTests is an example's TestMain: when TestHelp runs the test binary
// again, it runs main with the binary's arguments and exits; otherwise it
// runs the tests and checks that no goroutine leaked.
func RunTests(m *testing.M, main func()) {
	if os.Getenv(envRunMain) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestHelp runs the example's main (the test binary, through RunTests)
// with -h and checks that it exits 0 without starting anything and that
// its usage names each of flags, -v and every environment variable the
// examples read.
func TestHelp(t *testing.T, flags ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-h")
	// A ZooKeeper started by mistake would fail on this ZK_BACKEND.
	cmd.Env = append(os.Environ(), envRunMain+"=1", "ZK_BACKEND=not-started-by-h", "ZK_SERVERS=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	usage := out.String()
	if err != nil {
		t.Errorf("-h: %v, want exit status 0", err)
	}
	for _, f := range append([]string{"v"}, flags...) {
		if !regexp.MustCompile(`\n  -` + regexp.QuoteMeta(f) + `\s`).MatchString(usage) {
			t.Errorf("usage does not show flag -%s", f)
		}
	}
	for _, env := range []string{"ZK_SERVERS", "ZK_BACKEND", "ZK_IMAGE", "ZK_PULL", "ZK_VERBOSE", "ZOOKEEPER_HOME"} {
		if !strings.Contains(usage, "\n  "+env+"=") {
			t.Errorf("usage does not explain %s", env)
		}
	}
	if !strings.HasPrefix(usage, "usage: go run ./examples/") || strings.Contains(usage, "ZooKeeper:") {
		t.Errorf("-h must print the usage only, got:\n%s", usage)
	}
	if t.Failed() {
		t.Logf("-h printed:\n%s", usage)
	}
}

// TestRun runs the whole story against a fresh ZooKeeper (zktest.New),
// within a minute, logs what it printed and fails t on its error: run
// checks the invariants itself.
func TestRun(t *testing.T, run RunFunc) {
	t.Helper()
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, c.Servers(), &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
}
