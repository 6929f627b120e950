package attack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestZkrecipesHelpNamesKeptAndLabel: `zkrecipes --help` lists the
// statuses and owners each node may show; the command prints `kept` (a
// write node kept after a downgrade, README and docs/operations.md) and the
// owner's `label=` (lock.WithLabel), so its help must name both.
func TestZkrecipesHelpNamesKeptAndLabel(t *testing.T) {
	bin := zkrecipesBin(t)
	if bin == "" {
		t.Skip("no zkrecipes binary")
	}
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	for _, w := range []string{"kept", "label"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("zkrecipes --help does not mention %q:\n%s", w, firstLines(string(out), 8))
		}
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

// zkrecipesBin is the zkrecipes command built from this tree (ZKRECIPES_BIN
// if set), built once per test binary; the test fails if it cannot be built.
func zkrecipesBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if b := os.Getenv("ZKRECIPES_BIN"); b != "" {
			binPath = b
			return
		}
		dir, err := os.MkdirTemp("", "attack-zkrecipes-")
		if err != nil {
			binErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(file))
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "zkrecipes"), "./cmd/zkrecipes")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/zkrecipes: %v: %s", err, out)
			return
		}
		binPath = filepath.Join(dir, "zkrecipes")
	})
	require.NoError(t, binErr)
	return binPath
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// zkrecipes runs the zkrecipes command on the fixture's servers with args
// and fails the test if it fails. Its output is the standard output alone
// with -json (so that it parses), else the standard and error outputs; ok
// is false when there is no command to run.
func (f *fixture) zkrecipes(t *testing.T, args ...string) (out string, ok bool) {
	t.Helper()
	bin := zkrecipesBin(t)
	if bin == "" {
		return "", false
	}
	cmd := exec.Command(bin, append([]string{"-servers", strings.Join(f.Servers(), ",")}, args...)...)
	run := cmd.CombinedOutput
	for _, a := range args {
		if a == "-json" {
			run = cmd.Output
		}
	}
	b, err := run()
	require.NoError(t, err, "zkrecipes %v: %s", args, b)
	return string(b), true
}

// locksDoc is what `zkrecipes locks -json` prints.
type locksDoc struct{ Queues []locksQueue }

type locksQueue struct {
	Path, Recipe string
	Nodes        []struct {
		Name, Kind, Status, Session string
		Owner                       struct {
			Client, Host, Label, ID string
			PID                     int
		}
	}
}

// locksJSON runs `zkrecipes locks -json path` (false when there is no
// command to run).
func (f *fixture) locksJSON(t *testing.T, path string) (locksDoc, string, bool) {
	t.Helper()
	var doc locksDoc
	out, ok := f.zkrecipes(t, "-json", "locks", path)
	if ok {
		require.NoError(t, json.Unmarshal([]byte(out), &doc), "%s", out)
	}
	return doc, out, ok
}

// cliStatus runs `zkrecipes locks -json path` and maps node name to status
// (nil when there is no command to run).
func cliStatus(t *testing.T, f *fixture, path string) map[string]string {
	t.Helper()
	doc, _, ok := f.locksJSON(t, path)
	if !ok {
		return nil
	}
	m := map[string]string{}
	for _, q := range doc.Queues {
		for _, n := range q.Nodes {
			m[n.Name] = n.Status
		}
	}
	return m
}
