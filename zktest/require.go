package zktest

import (
	"errors"
	"os"
	"strconv"
	"testing"
)

// RequireOrSkip applies the project's rule for tests that need ZooKeeper to
// the error of Start (or of a fault operation such as Kill):
//
//   - nil: nothing happens;
//   - a missing prerequisite (no Docker, no image, no java or ZooKeeper jars,
//     or a backend without the operation: ErrNoBackend, ErrDockerUnavailable,
//     ErrImageNotFound, ErrLocalUnavailable, ErrUnsupported): the test is
//     skipped with the error's explanation, except when the environment
//     variable CI is true, where it fails: CI must never pass by skipping;
//   - any other error: the test fails.
func RequireOrSkip(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if isMissingPrerequisite(err) || errors.Is(err, ErrUnsupported) {
		if InCI() {
			t.Fatalf("%v\n(CI=true: a missing prerequisite is a failure, not a skip)", err)
		}
		t.Skipf("skipped: %v", err)
	}
	t.Fatalf("%v", err)
}

// InCI reports whether the environment variable CI is set to a true value
// ("true", "1", ...), as CI systems do.
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv(envCI))
	return ci
}
