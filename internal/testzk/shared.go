package testzk

import (
	"context"
	"fmt"
	"os"
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

// Shared returns the ZooKeeper of this test binary, starting it on the
// first call (bounded by 2 minutes). Each test works under its own path
// (see Path); tests that hurt a server start their own with zktest.New.
// It skips or fails t, as zktest.RequireOrSkip decides, if none could be
// started.
func Shared(t testing.TB) *zktest.Cluster {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.c, shared.err = zktest.Start(ctx)
	})
	zktest.RequireOrSkip(t, shared.err)
	return shared.c
}

// Main is the body of a package's TestMain: it runs the tests, stops the
// Shared ZooKeeper if one was started, and, if the tests passed, fails the
// binary on goroutines left running (goleak). It does not return.
func Main(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "zktest stop:", err)
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
