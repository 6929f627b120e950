package zktest_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// TestMain skips the Examples when no ZooKeeper can be started (a failure
// under CI=true) and checks that no goroutine leaked.
func TestMain(m *testing.M) { testzk.Main(m) }
