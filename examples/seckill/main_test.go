package main

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/examples/internal/postgres"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) { demo.RunTests(m, main) }

// TestHelp: -h prints the usage, with -db and the environment, and runs
// nothing.
func TestHelp(t *testing.T) { demo.TestHelp(t, "db") }

// TestRunSQLite tells the whole story against a fresh ZooKeeper and an
// SQLite file; run checks what each sale must show.
func TestRunSQLite(t *testing.T) { testRun(t, "") }

// TestRunPostgres: the same against a PostgreSQL server started for the
// test (Debian's postgresql package; a missing one skips the test, and
// fails it under CI=true).
func TestRunPostgres(t *testing.T) {
	ctx := context.Background()
	dsn, stop, err := postgres.Start(ctx)
	if errors.Is(err, postgres.ErrMissing) {
		if zktest.InCI() {
			t.Fatalf("%v\n(CI=true: a missing prerequisite is a failure, not a skip)", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	testRun(t, dsn)
}

// testRun runs the four sales against a fresh ZooKeeper and the database
// dsn, within 2 minutes (three of the sales wait for sessions to expire,
// five in all), logs what they printed and fails t on run's error.
func testRun(t *testing.T, dsn string) {
	c := zktest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, c.Servers(), &out, dsn)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
}
