package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRun tells the whole story against a fresh ZooKeeper; run checks the
// invariants itself.
func TestRun(t *testing.T) {
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
