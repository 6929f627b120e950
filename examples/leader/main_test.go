package main

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
)

func TestMain(m *testing.M) { demo.RunTests(m, main) }

// TestHelp: -h prints the usage, with the environment, and runs nothing.
func TestHelp(t *testing.T) { demo.TestHelp(t) }

// TestRun tells the whole story against a fresh ZooKeeper; run checks the
// invariants itself.
func TestRun(t *testing.T) { demo.TestRun(t, run) }
