package main

import (
	"os"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// TestMain runs the tests, or, with ZKRECIPES_TEST_MAIN=1 in the
// environment, the command itself: the terminal test runs this binary as
// the command.
func TestMain(m *testing.M) {
	if os.Getenv("ZKRECIPES_TEST_MAIN") == "1" {
		main()
		return
	}
	testzk.Main(m)
}
