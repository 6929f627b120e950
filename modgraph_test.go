package zkrecipes_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// libraryPackages are the packages a service imports: every public package
// of the library module but the tests' zktest.
var libraryPackages = []string{"conn", "metrics", "lock", "mutex", "semaphoremutex", "rwlock", "multilock", "leader", "exclusive"}

// maxUserModules is the most lines `go list -m all` may list for a module
// that imports every library package: the floor is 13 (the user's module,
// this one, go-zookeeper, uuid, goid, zap, and what zap's go.mod names:
// multierr, goleak, testify, yaml.v3, go-spew, go-difflib, kr/text), and
// one more is tolerated.
const maxUserModules = 14

// TestUserModuleGraph builds a module outside the repository that requires
// the library (through a replace to this clone) and imports every library
// package, as a service would, and checks what its module graph holds: at
// most maxUserModules lines of `go list -m all`, none of them Docker,
// testcontainers or plotting. It needs the Go module proxy only for modules
// missing from the module cache.
func TestUserModuleGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy and go build")
	}
	root, err := os.Getwd() // the test runs in the library module's root
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var imports strings.Builder
	for _, p := range libraryPackages {
		imports.WriteString("\t_ \"github.com/zkrecipes/zkrecipes/" + p + "\"\n")
	}
	files := map[string]string{
		"go.mod": "module example.com/service\n\ngo 1.22.0\n\n" +
			"require github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000\n\n" +
			"replace github.com/zkrecipes/zkrecipes => " + root + "\n",
		"main.go": "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Outside the workspace; -mod=mod lets go mod tidy write go.sum.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	goCmd("mod", "tidy")
	goCmd("build", "-o", os.DevNull, ".")
	mods := strings.Split(goCmd("list", "-m", "all"), "\n")
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("go list -m all: %d lines; go.sum: %d lines\n%s", len(mods), strings.Count(string(sum), "\n"), strings.Join(mods, "\n"))
	if len(mods) > maxUserModules {
		t.Errorf("go list -m all lists %d modules, want at most %d", len(mods), maxUserModules)
	}
	heavy := regexp.MustCompile(`(?i)docker|testcontainers|moby|containerd|gonum|opentelemetry`)
	for _, m := range mods {
		if heavy.MatchString(m) {
			t.Errorf("a module importing the library gets %s", m)
		}
	}
}
