package conn_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestPatchedZK builds a program whose go.mod replaces go-zookeeper v1.0.4
// with a copy of it in a directory, as a company carrying patches does, and
// runs it against a real server: Connect refuses it with ErrZKVersion
// naming the way through; with WithPatchedZK it connects; zktest.CheckWire
// passes for the unmodified copy, and fails for a copy that writes a
// request's length apart from its body (one assumption of the wire layer
// broken).
// Offline: the modules come from the module cache.
func TestPatchedZK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program twice")
	}
	c := zktest.New(t)
	goList := func(args ...string) string {
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		require.NoError(t, err, "go list %v", args)
		return strings.TrimSpace(string(out))
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	zkDir := goList("-m", "-f", "{{.Dir}}", "github.com/go-zookeeper/zk")
	dir := t.TempDir()
	fork := filepath.Join(dir, "zk")
	out, err := exec.Command("cp", "-R", zkDir, fork).CombinedOutput()
	require.NoError(t, err, "copy %s: %s", zkDir, out)
	out, err = exec.Command("chmod", "-R", "u+w", fork).CombinedOutput()
	require.NoError(t, err, "%s", out)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	files := map[string]string{
		"go.sum": string(sum),
		"go.mod": `module example.com/patchedzk

go 1.22.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/zkrecipes/zkrecipes v0.0.0
)

replace github.com/zkrecipes/zkrecipes => ` + root + `

replace github.com/go-zookeeper/zk => ./zk
`,
		"main.go": `package main

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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	servers := strings.Split(os.Args[2], ",")
	var err error
	switch os.Args[1] {
	case "connect":
		var s *conn.Session
		if s, err = conn.Connect(ctx, servers); err == nil {
			s.Close()
		}
	case "patched":
		var s *conn.Session
		if s, err = conn.Connect(ctx, servers, conn.WithPatchedZK()); err == nil {
			s.Close()
		}
	case "check":
		err = zktest.CheckWire(ctx, servers)
	}
	if err == nil {
		fmt.Println("ok")
		return
	}
	fmt.Println(errors.Is(err, conn.ErrZKVersion), err)
}
`,
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, out)
		return strings.TrimSpace(string(out))
	}
	servers := strings.Join(c.Servers(), ",")
	bin := filepath.Join(dir, "patchedzk")

	run("go", "build", "-o", bin, ".")
	got := run(bin, "connect", servers)
	assert.True(t, strings.HasPrefix(got, "true "+conn.ErrZKVersion.Error()), "Connect: %s", got)
	assert.Contains(t, got, "replaced by ./zk (devel)", "the error names what is linked")
	assert.Contains(t, got, "conn.WithPatchedZK()", "the error names the way through")
	assert.Contains(t, got, "zktest.CheckWire", "and the check to run")
	assert.Equal(t, "ok", run(bin, "patched", servers), "Connect with WithPatchedZK")
	assert.Equal(t, "ok", run(bin, "check", servers), "CheckWire on an unmodified copy")

	// The copy now writes each request's length, then its body: two
	// Writes for one frame.
	src := filepath.Join(fork, "conn.go")
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	const whole = "_, err = c.conn.Write(c.buf[:n+4])\n\tc.conn.SetWriteDeadline(time.Time{})\n\tif err != nil {\n\t\treq.recvChan"
	require.Equal(t, 1, strings.Count(string(b), whole), "go-zookeeper v1.0.4's sendData")
	b = []byte(strings.Replace(string(b), whole,
		"_, err = c.conn.Write(c.buf[:4])\n\tif err == nil {\n\t\t_, err = c.conn.Write(c.buf[4 : n+4])\n\t}\n\tc.conn.SetWriteDeadline(time.Time{})\n\tif err != nil {\n\t\treq.recvChan", 1))
	require.NoError(t, os.WriteFile(src, b, 0o644))
	run("go", "build", "-o", bin, ".")
	got = run(bin, "check", servers)
	t.Logf("CheckWire on the broken copy: %s", got)
	assert.True(t, strings.HasPrefix(got, "true "), "CheckWire fails with ErrZKVersion: %s", got)
	assert.Contains(t, got, "one Write per frame")
}
