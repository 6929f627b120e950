package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRun tells the whole story against a fresh ZooKeeper; run checks the
// invariants itself.
func TestRun(t *testing.T) { demo.TestRun(t, run) }
