package conn

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestCheckZKBuild: the build information of a program linking go-zookeeper
// v1.0.4 passes; another version, a replacement by another version or by a
// directory is ErrZKVersion naming what is linked, and for a replacement
// of v1.0.4 the way through (WithPatchedZK); none (a test binary) passes.
func TestCheckZKBuild(t *testing.T) {
	dep := func(version string, replace *debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Deps: []*debug.Module{
			{Path: "go.uber.org/zap", Version: "v1.27.0"},
			{Path: zkModule, Version: version, Replace: replace},
		}}
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string // "" for nil, else the error's text after ErrZKVersion's
	}{
		{"checked version", dep("v1.0.4", nil), ""},
		{"no go-zookeeper recorded", &debug.BuildInfo{}, ""},
		{"replaced by the checked version", dep("v1.0.3", &debug.Module{Path: zkModule, Version: "v1.0.4"}), ""},
		{"newer version", dep("v1.0.5", nil), ": linked github.com/go-zookeeper/zk v1.0.5"},
		{"older version", dep("v1.0.3", nil), ": linked github.com/go-zookeeper/zk v1.0.3"},
		{"fork", dep("v1.0.4", &debug.Module{Path: "example.com/zkfork", Version: "v1.0.4"}),
			": linked github.com/go-zookeeper/zk v1.0.4 replaced by example.com/zkfork v1.0.4; " + errZKPatched.Error()},
		{"directory", dep("v1.0.4", &debug.Module{Path: "../zk", Version: "(devel)"}),
			": linked github.com/go-zookeeper/zk v1.0.4 replaced by ../zk (devel); " + errZKPatched.Error()},
		{"fork of another version", dep("v1.0.3", &debug.Module{Path: "example.com/zkfork", Version: "v1.0.3"}),
			": linked github.com/go-zookeeper/zk v1.0.3 replaced by example.com/zkfork v1.0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkZKBuild(tc.info)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrZKVersion) || err.Error() != ErrZKVersion.Error()+tc.want {
				t.Fatalf("got %v, want ErrZKVersion%s", err, tc.want)
			}
		})
	}
}

// TestZKVersionPinned fails when the library's go.mod requires another
// go-zookeeper than the one the wire layer was checked against (zkVersion),
// or when the build this test runs in (workspace included) selects or
// replaces another: moving to another version means checking wire.go and
// watches.go against its conn.go first, then changing zkVersion.
func TestZKVersionPinned(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var required []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == zkModule {
			required = append(required, fields[1])
		}
		if len(fields) > 0 && (fields[0] == "replace" || strings.HasPrefix(sc.Text(), "replace")) &&
			strings.Contains(sc.Text(), zkModule) {
			t.Errorf("go.mod replaces go-zookeeper: %s", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(required) != 1 || required[0] != zkVersion {
		t.Errorf("go.mod requires %s %v; the wire layer is checked against %s", zkModule, required, zkVersion)
	}

	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}{{with .Replace}} => {{.Path}} {{.Version}}{{end}}", zkModule).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m %s: %v\n%s", zkModule, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != zkVersion {
		t.Errorf("this build selects %s %s; the wire layer is checked against %s", zkModule, got, zkVersion)
	}
}

// TestConnectRefusesOtherZK builds a program that links go-zookeeper from a
// directory (a copy of v1.0.4's source: for conn, code it was not checked
// against) and calls Connect: it returns ErrZKVersion before dialing.
// Offline: the modules come from the module cache.
func TestConnectRefusesOtherZK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	goList := func(args ...string) string {
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	zkDir := goList("-m", "-f", "{{.Dir}}", zkModule)
	dir := t.TempDir()
	fork := filepath.Join(dir, "zk")
	if out, err := exec.Command("cp", "-R", zkDir, fork).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", zkDir, err, out)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.sum": string(sum),
		"go.mod": `module example.com/otherzk

go 1.22.0

require (
	github.com/go-zookeeper/zk ` + zkVersion + `
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

	"github.com/zkrecipes/zkrecipes/conn"
)

func main() {
	_, err := conn.Connect(context.Background(), []string{"127.0.0.1:1"})
	fmt.Println(errors.Is(err, conn.ErrZKVersion), err)
}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("go", "build", "-o", "otherzk", ".")
	got := run(filepath.Join(dir, "otherzk"))
	want := "true " + ErrZKVersion.Error() + ": linked github.com/go-zookeeper/zk v1.0.4 replaced by ./zk (devel); " + errZKPatched.Error()
	if got != want {
		t.Fatalf("Connect with go-zookeeper replaced by a directory:\n got %s\nwant %s", got, want)
	}
}

// TestCheckZKVersionPatched: WithPatchedZK lets a replacement of v1.0.4
// through, not another version.
func TestCheckZKVersionPatched(t *testing.T) {
	fork := &debug.BuildInfo{Deps: []*debug.Module{{Path: zkModule, Version: zkVersion, Replace: &debug.Module{Path: "./zk", Version: "(devel)"}}}}
	other := &debug.BuildInfo{Deps: []*debug.Module{{Path: zkModule, Version: "v1.0.5"}}}
	for _, tc := range []struct {
		info *debug.BuildInfo
		opts []Option
		ok   bool
	}{
		{fork, nil, false},
		{fork, []Option{WithPatchedZK()}, true},
		{fork, []Option{nil, WithPatchedZK()}, true},
		{other, []Option{WithPatchedZK()}, false},
	} {
		err := checkZKWith(tc.info, tc.opts)
		if (err == nil) != tc.ok {
			t.Errorf("%v with %d options: got %v", tc.info.Deps[0], len(tc.opts), err)
		}
	}
}
