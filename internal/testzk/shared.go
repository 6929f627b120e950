package testzk

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// shared is the test binary's ZooKeeper, started by the first Shared call;
// guarded by once.
var shared struct {
	once sync.Once
	c    *zktest.Cluster
	err  error
}

// start starts the shared ZooKeeper once.
func start() {
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.c, shared.err = zktest.Start(ctx)
	})
}

// Servers returns the addresses of the Shared ZooKeeper, for the package's
// Examples (which have no testing.TB); Main has started it when Examples
// are to run. It panics if there is none.
func Servers() []string {
	start()
	if shared.err != nil {
		panic(fmt.Sprintf("testzk: no ZooKeeper for the Examples: %v", shared.err))
	}
	return shared.c.Servers()
}

// Shared returns the ZooKeeper of this test binary, starting it on the
// first call (bounded by 2 minutes). Each test works under its own path
// (see Path); tests that hurt a server start their own with zktest.New.
// It skips or fails t, as zktest.RequireOrSkip decides, if none could be
// started.
func Shared(t testing.TB) *zktest.Cluster {
	t.Helper()
	start()
	zktest.RequireOrSkip(t, shared.err)
	return shared.c
}

// Main is the body of a package's TestMain: it runs the tests, stops the
// Shared ZooKeeper if one was started, and, if the tests passed, fails the
// binary on goroutines left running (goleak). It does not return.
//
// When Examples may run (no -run pattern, or one naming Examples), it
// starts the Shared ZooKeeper first, for Servers; if none can be started
// for want of a prerequisite, the Examples are skipped (-skip), as
// zktest.RequireOrSkip skips a test, except under CI=true.
func Main(m *testing.M) {
	flag.Parse()
	if examplesMayRun() {
		start()
		if shared.err != nil && !zktest.InCI() && isMissing(shared.err) {
			fmt.Fprintln(os.Stderr, "testzk: Examples skipped:", shared.err)
			skip := "^Example"
			if f := flag.Lookup("test.skip"); f != nil {
				if old := f.Value.String(); old != "" {
					skip += "|" + old
				}
				_ = f.Value.Set(skip)
			}
		}
	}
	code := m.Run()
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "zktest stop:", err)
		}
	}
	if code == 0 {
		// A Connect that failed against a silent server returns at once and
		// leaves go-zookeeper's Close behind for up to a second (it waits
		// that long for an answer that cannot come): let it end.
		err := goleak.Find()
		for end := time.Now().Add(3 * time.Second); err != nil && time.Now().Before(end); {
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// examplesMayRun reports whether -test.run lets Examples run: it is empty,
// or its first element matches "Example" or names one.
func examplesMayRun() bool {
	f := flag.Lookup("test.run")
	if f == nil || f.Value.String() == "" {
		return true
	}
	run := f.Value.String()
	if strings.Contains(run, "Example") {
		return true
	}
	first, _, _ := strings.Cut(run, "/")
	ok, err := regexp.MatchString(first, "Example")
	return err == nil && ok
}

// isMissing reports whether err means no ZooKeeper could be provided
// (zktest's missing prerequisites), not that one failed.
func isMissing(err error) bool {
	return errors.Is(err, zktest.ErrNoBackend) || errors.Is(err, zktest.ErrDockerUnavailable) ||
		errors.Is(err, zktest.ErrImageNotFound) || errors.Is(err, zktest.ErrLocalUnavailable)
}
