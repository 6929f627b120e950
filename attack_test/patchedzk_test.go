package attack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// patchedMain is a program whose go.mod replaces go-zookeeper v1.0.4 by a
// copy: it connects without and with conn.WithPatchedZK, then runs
// zktest.CheckWire, and prints one line each.
const patchedMain = `package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func main() {
	servers := strings.Split(os.Args[1], ",")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := conn.Connect(ctx, servers)
	fmt.Printf("plain: zkversion=%v err=%v\n", errors.Is(err, conn.ErrZKVersion), err)
	if s != nil {
		s.Close()
	}
	s, err = conn.Connect(ctx, servers, conn.WithPatchedZK())
	fmt.Printf("patched: zkversion=%v err=%v\n", errors.Is(err, conn.ErrZKVersion), err)
	if s != nil {
		s.Close()
	}
	err = zktest.CheckWire(ctx, servers)
	fmt.Printf("checkwire: zkversion=%v err=%v\n", errors.Is(err, conn.ErrZKVersion), err)
}
`

// runPatched builds and runs patchedMain with go-zookeeper v1.0.4 replaced
// by a copy that patch edits, against servers.
func runPatched(t *testing.T, servers []string, patch func(conngo string) string) string {
	t.Helper()
	dir := t.TempDir()
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	src := filepath.Join(strings.TrimSpace(string(modcache)), "github.com/go-zookeeper/zk@v1.0.4")
	cp := filepath.Join(dir, "zkcopy")
	require.NoError(t, exec.Command("cp", "-r", src, cp).Run())
	require.NoError(t, exec.Command("chmod", "-R", "u+w", cp).Run())
	cg := filepath.Join(cp, "conn.go")
	b, err := os.ReadFile(cg)
	require.NoError(t, err)
	if patch != nil {
		p := patch(string(b))
		require.NotEqual(t, string(b), p, "patch changed nothing")
		require.NoError(t, os.WriteFile(cg, []byte(p), 0o644))
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	app := filepath.Join(dir, "app")
	require.NoError(t, os.MkdirAll(app, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(app, "main.go"), []byte(patchedMain), 0o644))
	gomod := "module example.com/patched\n\ngo 1.22.0\n\nrequire (\n\tgithub.com/zkrecipes/zkrecipes v0.0.0\n\tgithub.com/go-zookeeper/zk v1.0.4\n)\n\n" +
		"replace github.com/zkrecipes/zkrecipes => " + root + "\n\nreplace github.com/go-zookeeper/zk => ../zkcopy\n"
	require.NoError(t, os.WriteFile(filepath.Join(app, "go.mod"), []byte(gomod), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(app, "go.sum"), sum, 0o644))
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	tidy := exec.Command("go", "mod", "tidy", "-e") // -e: the tests of our packages may need modules not in the cache
	tidy.Dir, tidy.Env = app, env
	out, err := tidy.CombinedOutput()
	require.NoError(t, err, "go mod tidy: %s", out)
	run := exec.Command("go", "run", ".", strings.Join(servers, ","))
	run.Dir, run.Env = app, env
	start := time.Now()
	out, err = run.CombinedOutput()
	require.NoError(t, err, "go run: %s", out)
	t.Logf("patched program (%v):\n%s", time.Since(start), out)
	return string(out)
}

// TestPatchedZKCopyAcceptedAndChecked checks the docs of conn's
// WithPatchedZK and zktest's CheckWire with an unchanged copy of v1.0.4
// replacing the module:
// Connect refuses it (ErrZKVersion) without WithPatchedZK, accepts it
// with, and CheckWire returns nil; and with a copy whose Close no longer
// writes a close request (opcode -11), one of the things CheckWire lists,
// CheckWire fails with an error matching ErrZKVersion.
func TestPatchedZKCopyAcceptedAndChecked(t *testing.T) {
	f := newFixture(t)
	out := runPatched(t, f.Servers(), nil)
	require.Contains(t, out, "plain: zkversion=true", "Connect with a replaced go-zookeeper, without WithPatchedZK")
	require.Contains(t, out, "patched: zkversion=false err=<nil>", "Connect with WithPatchedZK")
	require.Contains(t, out, "checkwire: zkversion=false err=<nil>", "CheckWire on an unchanged copy")

	out = runPatched(t, f.Servers(), func(s string) string {
		return strings.Replace(s, "case <-c.queueRequest(opClose, &closeRequest{}, &closeResponse{}, nil):",
			"case <-c.queueRequest(opPing, &pingRequest{}, &pingResponse{}, nil):", 1)
	})
	require.Contains(t, out, "checkwire: zkversion=true", "CheckWire on a copy whose Close sends no close request")
}
