// Package recipes_test holds integration, fault and interop tests that span
// several recipes, against a real ZooKeeper.
package recipes_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
	"github.com/zkrecipes/zkrecipes/zktest/docker"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newZK is zktest.New with the docker backend available through the
// testcontainers-go driver: ZK_BACKEND=docker runs these suites in Docker.
func newZK(t testing.TB, opts ...zktest.Option) *zktest.Cluster {
	t.Helper()
	return zktest.New(t, append([]zktest.Option{zktest.WithDriver(docker.Driver())}, opts...)...)
}
