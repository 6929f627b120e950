package main

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
)

func TestMain(m *testing.M) { demo.RunTests(m, main) }

// TestHelp: -h prints the usage, with the environment, and runs nothing.
func TestHelp(t *testing.T) {
	demo.TestHelp(t, "recipe", "clients", "cycles", "leases", "servers", "session-timeout")
}
