package conn_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) {
	flag.Parse()
	skipExamplesWithoutZooKeeper()
	goleak.VerifyTestMain(m)
}

// serverExamples are the runnable Examples that start a ZooKeeper.
var serverExamples = []string{"ExampleLease_Fence"}

// skipExamplesWithoutZooKeeper applies the project's rule for what needs
// ZooKeeper to the Examples, which cannot skip themselves: when one is to
// run and no ZooKeeper can be started for want of a prerequisite, they are
// skipped (-test.skip), with a line that says why, except under CI=true,
// where they run and fail.
func skipExamplesWithoutZooKeeper() {
	var selected []string
	for _, name := range serverExamples {
		if matches("test.run", name, true) && !matches("test.skip", name, false) {
			selected = append(selected, name)
		}
	}
	if len(selected) == 0 || zktest.InCI() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := zktest.Start(ctx)
	if err == nil {
		c.Stop()
		return
	}
	if !errors.Is(err, zktest.ErrNoBackend) && !errors.Is(err, zktest.ErrDockerUnavailable) &&
		!errors.Is(err, zktest.ErrImageNotFound) && !errors.Is(err, zktest.ErrLocalUnavailable) {
		return // the Examples fail with it
	}
	fmt.Fprintf(os.Stderr, "skipping %s: %v\n", strings.Join(selected, ", "), err)
	skip := "^(" + strings.Join(selected, "|") + ")$"
	if old := flag.Lookup("test.skip").Value.String(); old != "" {
		skip = old + "|" + skip
	}
	_ = flag.Set("test.skip", skip)
}

// matches reports whether the pattern of the flag test.run or test.skip
// (its first level: Examples have no subtests) matches name; empty
// matches as empty says.
func matches(flagName, name string, empty bool) bool {
	pattern := flag.Lookup(flagName).Value.String()
	if pattern == "" {
		return empty
	}
	first, _, _ := strings.Cut(pattern, "/")
	re, err := regexp.Compile(first)
	return err == nil && re.MatchString(name)
}
