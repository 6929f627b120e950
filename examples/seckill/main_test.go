package main

import (
	"context"
	"errors"
	"io"
	"testing"

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
func TestRunSQLite(t *testing.T) { demo.TestRun(t, sqlite) }

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
	demo.TestRun(t, func(ctx context.Context, servers []string, out io.Writer) error {
		return run(ctx, servers, out, dsn)
	})
}

func sqlite(ctx context.Context, servers []string, out io.Writer) error {
	return run(ctx, servers, out, "")
}
