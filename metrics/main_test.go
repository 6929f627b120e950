package metrics_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// TestMain starts the ZooKeeper the Examples use (testzk.Servers) and
// checks that no goroutine leaked.
func TestMain(m *testing.M) { testzk.Main(m) }
