package zkrecipes_test

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadmeShowsTheExample: README.md's first Go block is
// readme_example_test.go without its package clause, so the snippet a new
// user copies is the code compiled and run by TestReadmeExample.
func TestReadmeShowsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	if ok {
		block, _, ok = strings.Cut(block, "```\n")
	}
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(string(src), "package zkrecipes_test\n\n")
	if block != want {
		t.Errorf("README.md's Go block differs from readme_example_test.go; copy the file, from its imports on, into README.md\n--- README.md\n%s\n--- readme_example_test.go\n%s", block, want)
	}
}

// TestReadmeExample runs the README's example as three processes would:
// each opens its one Session and mutex, and sells twice from two
// goroutines at once; every sale takes the lock, so the six sales leave
// six different counts and the stock ends at 4. A seventh process finds
// the last item sold out once the stock is 0.
func TestReadmeExample(t *testing.T) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, _, err := zk.Connect(c.Servers(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Create("/stock", []byte("10"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	var (
		mu   sync.Mutex
		left []int
		wg   sync.WaitGroup
	)
	for range 3 {
		sess, m, err := open(ctx, c.Servers())
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := sell(ctx, sess, m)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				left = append(left, n)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	slices.Sort(left)
	if want := []int{4, 5, 6, 7, 8, 9}; !slices.Equal(left, want) {
		t.Errorf("sales left %v, want %v (each count once: no sale lost or doubled)", left, want)
	}

	if _, err := admin.Set("/stock", []byte("0"), -1); err != nil {
		t.Fatal(err)
	}
	sess, m, err := open(ctx, c.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if n, err := sell(ctx, sess, m); err == nil || err.Error() != "sold out" {
		t.Errorf("sell at 0: %d, %v; want sold out", n, err)
	}
}

// TestReadmeExampleNoServer: copied as it is, the example returns the
// connect error when no server answers; it does not panic.
func TestReadmeExampleNoServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, _, err := open(ctx, []string{"127.0.0.1:1"}); err == nil {
		t.Fatal("open without a server: no error")
	}
}

// unfollowable are the references a reader of the docs cannot follow: the
// project's issue tracker, its working sessions and machine, its CI
// scripts, and an install command that needs a release.
var unfollowable = []struct {
	re     *regexp.Regexp
	what   string
	unless *regexp.Regexp // a match that also matches this is fine
}{
	{regexp.MustCompile(`\b[Ii]ssues? #?[0-9]+`), "an issue number", nil},
	{regexp.MustCompile(`(^|[^\w&/])#[0-9]+\b`), "an issue number", nil},
	{regexp.MustCompile(`\b[Ss]essions? [0-9]+(?:[.–-][0-9.]+)?\b(?: ?(?:ms|s|min)\b)?`), `"session N", a working session`,
		regexp.MustCompile(`[0-9] ?(ms|s|min)$`)}, // "a session of 1.5 s" is a duration
	{regexp.MustCompile(`\bVMs?\b`), "the project's machine (say what it is: cores, system)", nil},
	{regexp.MustCompile(`\.ci/`), "CI internals", nil},
}

// latest flags `go install ...@latest` until the first release (a "## [v..."
// heading in CHANGELOG.md): the command's module requires a library version
// the module proxy has.
var latest = regexp.MustCompile(`@latest\b`)

// TestDocsReferOnlyToWhatUsersCanFollow: README.md, CHANGELOG.md, docs/*.md
// and the comments of the library's packages name nothing a user cannot
// follow (unfollowable, latest).
func TestDocsReferOnlyToWhatUsersCanFollow(t *testing.T) {
	files := []string{"README.md", "CHANGELOG.md"}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	changelog, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	released := regexp.MustCompile(`(?m)^## \[?v[0-9]`).Match(changelog)

	var hits []string
	check := func(where, line string) {
		for _, u := range unfollowable {
			m := u.re.FindString(line)
			if m == "" || u.unless != nil && u.unless.MatchString(m) {
				continue
			}
			hits = append(hits, fmt.Sprintf("%s: %q: %s", where, strings.TrimSpace(m), u.what))
		}
		if !released && latest.MatchString(line) {
			hits = append(hits, fmt.Sprintf("%s: go install @latest: cannot build before the first release", where))
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			check(fmt.Sprintf("%s:%d", f, i+1), line)
		}
	}
	for _, pkg := range []string{"conn", "exclusive", "leader", "lock", "multilock", "mutex", "rwlock", "semaphoremutex", "zktest"} {
		srcs, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range srcs {
			if strings.HasSuffix(src, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, src, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range f.Comments {
				for _, c := range g.List {
					for i, line := range strings.Split(c.Text, "\n") {
						check(fmt.Sprintf("%s:%d", src, fset.Position(c.Pos()).Line+i), line)
					}
				}
			}
		}
	}
	if len(hits) > 0 {
		t.Errorf("%d references a user cannot follow; say what they mean instead:\n%s", len(hits), strings.Join(hits, "\n"))
	}
}

// TestReadmeInstallFromClone: before the first release no module proxy
// serves the module, so README.md says how to use a clone; its commands
// (the sh block with "go mod edit", the clone made a link to this one) run
// in a new module that imports a recipe and the Prometheus adapter, and it
// builds. README still names the go get line for when it is published.
func TestReadmeInstallFromClone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy and go build")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "go get github.com/zkrecipes/zkrecipes ") {
		t.Error("README.md lost the go get line")
	}
	var block string
	for _, b := range strings.Split(string(readme), "```sh\n")[1:] {
		b, _, _ = strings.Cut(b, "```\n")
		if strings.Contains(b, "go mod edit") {
			block = b
			break
		}
	}
	if block == "" {
		t.Fatal("README.md has no sh block saying how to use a clone (go mod edit -replace)")
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	top := t.TempDir()
	svc := filepath.Join(top, "service")
	if err := os.Symlink(root, filepath.Join(top, "zkrecipes")); err != nil { // the clone
		t.Fatal(err)
	}
	if err := os.Mkdir(svc, 0o755); err != nil {
		t.Fatal(err)
	}
	main := "package main\n\nimport (\n\t_ \"github.com/zkrecipes/zkrecipes/metrics/prometheus\"\n\t_ \"github.com/zkrecipes/zkrecipes/mutex\"\n)\n\nfunc main() {}\n"
	if err := os.WriteFile(filepath.Join(svc, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(line string) {
		t.Helper()
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir = svc
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	run("go mod init example.com/service")
	ran := 0
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "go ") {
			run(line)
			ran++
		}
	}
	if ran < 2 {
		t.Fatalf("README.md's clone block has %d go commands:\n%s", ran, block)
	}
	run("go build -o /dev/null .")
}
