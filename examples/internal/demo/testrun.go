package demo

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestRun runs the whole story against a fresh ZooKeeper (zktest.New),
// within a minute, logs what it printed and fails t on its error: run
// checks the invariants itself.
func TestRun(t *testing.T, run RunFunc) {
	t.Helper()
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, c.Servers(), &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
}
