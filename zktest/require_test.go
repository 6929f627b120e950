package zktest_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// recordingTB records whether RequireOrSkip skipped or failed.
type recordingTB struct {
	testing.TB // nil: only the methods below are called
	outcome    string
}

func (r *recordingTB) Helper()              {}
func (r *recordingTB) Skipf(string, ...any) { r.outcome = "skip"; runtime.Goexit() }
func (r *recordingTB) Fatalf(string, ...any) {
	r.outcome = "fatal"
	runtime.Goexit()
}

func requireOrSkip(err error) string {
	r := &recordingTB{outcome: "pass"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		zktest.RequireOrSkip(r, err)
	}()
	<-done
	return r.outcome
}

func TestRequireOrSkip(t *testing.T) {
	missing := fmt.Errorf("wrapped: %w", zktest.ErrImageNotFound)
	for _, tc := range []struct {
		ci   string
		err  error
		want string
	}{
		{"", nil, "pass"},
		{"", missing, "skip"},
		{"", zktest.ErrNoBackend, "skip"},
		{"", zktest.ErrUnsupported, "skip"},
		{"", zktest.ErrNotServing, "fatal"},
		{"", errors.New("other"), "fatal"},
		{"true", nil, "pass"},
		{"true", missing, "fatal"},
		{"1", zktest.ErrLocalUnavailable, "fatal"},
		{"false", zktest.ErrDockerUnavailable, "skip"},
	} {
		t.Setenv("CI", tc.ci)
		if got := requireOrSkip(tc.err); got != tc.want {
			t.Errorf("CI=%q, err %v: %s, want %s", tc.ci, tc.err, got, tc.want)
		}
	}
}
