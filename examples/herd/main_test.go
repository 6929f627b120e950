package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) { demo.RunTests(m, main) }

// TestHelp: -h prints the usage, with the environment, and runs nothing.
func TestHelp(t *testing.T) { demo.TestHelp(t, "n", "hold", "out", "servers", "quick") }

// TestRun runs the -quick measurement against a fresh ZooKeeper: it must
// find no violation, print a row per lock and N, and write the chart.
func TestRun(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waiters, err := parseWaiters(quickWaiters)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{waiters: waiters, hold: quickHold, out: filepath.Join(t.TempDir(), "herd.png"), quick: true}
	var out bytes.Buffer
	if err := run(ctx, cfg, c.Servers(), &out, nil); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())

	for _, s := range subjects() {
		row := regexp.MustCompile(`(?m)^ *\d* +` + s.name + ` +(\d+\.\d|n/a) +\d+\.\d `)
		if n := len(row.FindAllString(out.String(), -1)); n != len(waiters) {
			t.Errorf("%d rows for %s, want %d", n, s.name, len(waiters))
		}
	}
	png, err := os.ReadFile(cfg.out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG", cfg.out)
	}
}

func TestParseWaiters(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"5,10,25", "[5 10 25]"},
		{"100, 5,5", "[5 100]"},
		{"0", "error"},
		{"5,x", "error"},
	} {
		got, err := parseWaiters(tc.in)
		s := fmt.Sprint(got)
		if err != nil {
			s = "error"
		}
		if s != tc.want {
			t.Errorf("parseWaiters(%q) = %s, want %s", tc.in, s, tc.want)
		}
	}
}

func TestReproduce(t *testing.T) {
	t.Setenv("ZK_SERVERS", "")
	t.Setenv("ZK_BACKEND", "local")
	t.Setenv("ZK_IMAGE", "")
	cfg := config{waiters: []int{5, 10}, hold: 20 * time.Millisecond, out: "my chart.svg"}
	want := `ZK_BACKEND=local go run ./examples/herd -n 5,10 -hold 20ms -out 'my chart.svg'`
	if got := reproduce(cfg); got != want {
		t.Errorf("reproduce = %s\nwant        %s", got, want)
	}
	cfg.servers = []string{"zk1:2181", "zk2:2181"}
	want = `go run ./examples/herd -n 5,10 -hold 20ms -out 'my chart.svg' -servers zk1:2181,zk2:2181`
	if got := reproduce(cfg); got != want {
		t.Errorf("reproduce = %s\nwant        %s", got, want)
	}
}

// TestChartGoesToATempDir: without -out, the example (its main, run as a
// program in a directory of its own) writes its chart into a new temporary
// directory, whose path it prints, and nothing into the working directory.
func TestChartGoesToATempDir(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wd, tmp := t.TempDir(), t.TempDir()
	cmd := exec.CommandContext(ctx, os.Args[0], "-quick", "-n", "2", "-servers", strings.Join(c.Servers(), ","))
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "ZKRECIPES_EXAMPLE_RUN_MAIN=1", "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if left, _ := os.ReadDir(wd); len(left) > 0 {
		t.Errorf("the run wrote into its working directory: %v", left)
	}
	m := regexp.MustCompile(`(?m)^chart: (.*)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no chart: line in\n%s", out)
	}
	chart := string(m[1])
	if !strings.HasPrefix(chart, tmp+string(filepath.Separator)) {
		t.Errorf("chart at %s, want under the temporary directory %s", chart, tmp)
	}
	if _, err := os.Stat(chart); err != nil {
		t.Error(err)
	}
	if bytes.Contains(out, []byte("-out")) {
		t.Errorf("the reproduce line names the temporary chart:\n%s", out)
	}
}
