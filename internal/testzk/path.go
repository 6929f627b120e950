package testzk

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// paths numbers the paths Path hands out.
var paths atomic.Int64

// Path is <c.Root()>/<test name>-<n>/<leaf>, unique to the call: tests may
// run with -count=N against the same Shared ZooKeeper.
func Path(t testing.TB, c *zktest.Cluster, leaf string) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("%s/%s-%d/%s", c.Root(), name, paths.Add(1), leaf)
}
