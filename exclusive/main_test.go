package exclusive_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// TestMain stops the shared ZooKeeper (testzk.Shared) after the tests and
// checks that no goroutine leaked.
func TestMain(m *testing.M) { testzk.Main(m) }
