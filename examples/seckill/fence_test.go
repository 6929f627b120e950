package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/examples/internal/postgres"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestFenceInterleavings forces, step by step, the two interleavings in
// which a fencing token checked on the write alone loses an update, on
// SQLite and on PostgreSQL: two leases on one lock through ZooKeeper, the
// first holder's session expired while it is frozen, the second granted.
// Each runs under both rules: "check on write" (read the row, work, write
// under the fencing condition) must lose the update, as it did in the
// tutorials' pattern; "claim" (register the token on the row as the read,
// then work, then write under the same condition) must not.
//
//   - stale reads first: a reads, freezes; b reads; a wakes and writes;
//     b writes.
//   - paused before commit: a's fenced write passes and a freezes before
//     its COMMIT; b reads; a commits; b writes.
func TestFenceInterleavings(t *testing.T) {
	c := zktest.New(t)
	for _, db := range []string{"SQLite", "PostgreSQL"} {
		t.Run(db, func(t *testing.T) {
			dsn := ""
			if db == "PostgreSQL" {
				dsn = startPostgres(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			st, err := openStore(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.close()
			// Each holder is a process of its own, on a connection of its
			// own; SQLite's pool is one connection for the demo's workers.
			st.db.(*sql.DB).SetMaxOpenConns(4)
			for _, il := range []string{"stale reads first", "paused before commit"} {
				for _, claim := range []bool{false, true} {
					rule := map[bool]string{false: "check on write", true: "claim"}[claim]
					t.Run(il+"/"+rule, func(t *testing.T) {
						lost, log := interleave(ctx, t, c, st, il, claim)
						t.Logf("%s, %s, %s:\n   %s", db, il, rule, strings.Join(log, "\n   "))
						switch {
						case !claim && !lost:
							t.Error("the check on the write alone did not lose the update: the interleaving was not forced")
						case claim && lost:
							t.Error("the claimed token lost an update")
						}
					})
				}
			}
		})
	}
}

// holder is a lock holder and its own connection to the store.
type holder struct {
	name  string
	st    *store
	m     *mutex.InterProcessMutex
	lease *conn.Lease
	token conn.Fence
	read  int // the stock it read
}

// interleave runs interleaving il on a new sale of 10 items under the rule
// claim, and says whether an update was lost (the stock does not match the
// orders taken), with what happened, a line a step.
func interleave(ctx context.Context, t *testing.T, c *zktest.Cluster, st *store, il string, claim bool) (lost bool, log []string) {
	t.Helper()
	logf := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
	const items = 10
	shop := strings.NewReplacer(" ", "-", "/", "-").Replace(fmt.Sprintf("%s-%v-%d", il, claim, time.Now().UnixNano()))
	if err := st.open(ctx, shop, items); err != nil {
		t.Fatal(err)
	}
	path := c.Root() + "/" + shop
	a, b := newHolder(ctx, t, c, st, "a", path), newHolder(ctx, t, c, st, "b", path)
	acquire(ctx, t, a)

	read := func(h *holder) {
		t.Helper()
		var err error
		if claim {
			h.read, err = h.st.claim(ctx, shop, h.token)
			logf("%s (token %v) claims the row and reads stock %d", h.name, h.token, h.read)
		} else {
			h.read, err = h.st.left(ctx, shop)
			logf("%s (token %v) reads stock %d", h.name, h.token, h.read)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	sold := 0
	write := func(h *holder, tx *sql.Tx) {
		t.Helper()
		var err error
		if tx != nil {
			err = h.st.sellFencedTx(ctx, tx, shop, h.read, h.name, h.token)
		} else {
			err = h.st.sellFenced(ctx, shop, h.read, h.name, h.token)
		}
		var refused *fencedError
		switch {
		case errors.As(err, &refused):
			logf("%s writes stock %d: %v", h.name, h.read-1, err)
			if tx != nil {
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
			}
		case err != nil:
			t.Fatal(err)
		default:
			sold++
			if tx != nil {
				logf("%s writes stock %d: accepted, not yet committed", h.name, h.read-1)
			} else {
				logf("%s writes stock %d: accepted", h.name, h.read-1)
			}
		}
	}
	// freeze stands for a's pause past its session: the server expires it
	// and grants the lock to b.
	freeze := func() {
		t.Helper()
		if err := zktest.ExpireEpoch(ctx, c.Servers()[0], a.lease.Epoch()); err != nil {
			t.Fatal(err)
		}
		acquire(ctx, t, b)
		if b.token.Compare(a.token) <= 0 {
			t.Fatalf("b's token %v is not newer than a's %v", b.token, a.token)
		}
		logf("a freezes; its session expires; b is granted the lock")
	}

	switch il {
	case "stale reads first":
		read(a)
		freeze()
		read(b)
		write(a, nil)
		write(b, nil)
	case "paused before commit":
		read(a)
		tx, err := a.st.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		write(a, tx)
		freeze()
		if claim {
			claimPastUncommitted(ctx, t, st, shop, b, func() {
				if err := tx.Commit(); err != nil {
					t.Error(err)
				}
				logf("a commits")
			}, logf)
		} else {
			read(b)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			logf("a commits")
		}
		write(b, nil)
	}

	// a's lease really was lost while it wrote.
	select {
	case <-a.lease.Lost():
	case <-ctx.Done():
		t.Fatal("a's lease is not lost")
	}
	left, err := st.left(ctx, shop)
	if err != nil {
		t.Fatal(err)
	}
	lost = items-left != sold
	verdict := "correct"
	if lost {
		verdict = fmt.Sprintf("LOST UPDATE: %d sales took %d from the stock", sold, items-left)
	}
	logf("%d items, %d sold, stock %d: %s", items, sold, left, verdict)
	for _, h := range []*holder{a, b} {
		if err := h.m.Release(ctx); err != nil { // a's lost lease releases without error
			t.Error(err)
		}
	}
	if err := st.remove(ctx, shop); err != nil {
		t.Error(err)
	}
	return lost, log
}

// claimPastUncommitted is b's claim while a's fenced write is not yet
// committed: it cannot pass that write. PostgreSQL makes it wait for a's
// row lock (seen in pg_blocking_pids) until commit runs, then it reads a's
// update; SQLite refuses it as busy, the database being locked by a's
// transaction (a busy timeout retries it), and it passes after commit.
func claimPastUncommitted(ctx context.Context, t *testing.T, st *store, shop string, b *holder, commit func(), logf func(string, ...any)) {
	t.Helper()
	c := b.st.db.(*sql.Conn)
	if !st.postgres {
		if _, err := c.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
			t.Fatal(err)
		}
		_, err := b.st.claim(ctx, shop, b.token)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			t.Fatalf("b's claim while a's write is uncommitted: %v, want SQLITE_BUSY", err)
		}
		logf("b (token %v) claims the row: %v", b.token, err)
		if _, err := c.ExecContext(ctx, "PRAGMA busy_timeout = 30000"); err != nil {
			t.Fatal(err)
		}
		commit()
		if b.read, err = b.st.claim(ctx, shop, b.token); err != nil {
			t.Fatal(err)
		}
		logf("b (token %v) claims the row again and reads stock %d", b.token, b.read)
		return
	}
	var pid int
	if err := c.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	type claimed struct {
		left int
		err  error
	}
	done := make(chan claimed, 1)
	go func() {
		left, err := b.st.claim(ctx, shop, b.token)
		done <- claimed{left, err}
	}()
	waited := demo.WaitFor(ctx, 30*time.Second, func() bool {
		var n int
		err := st.db.QueryRowContext(ctx, "SELECT cardinality(pg_blocking_pids($1))", pid).Scan(&n)
		return err == nil && n > 0
	})
	if waited == nil {
		logf("b (token %v) claims the row: waits for a's row lock", b.token)
	}
	commit()
	r := <-done
	if waited != nil {
		t.Fatalf("b's claim did not wait for a's row lock: %v", waited)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	b.read = r.left
	logf("b's claim passes and reads stock %d", b.read)
}

// newHolder connects a holder of the lock path to ZooKeeper, on a session
// of its own, and to the store, on a connection of its own.
func newHolder(ctx context.Context, t *testing.T, c *zktest.Cluster, st *store, name, path string) *holder {
	t.Helper()
	s, err := conn.Connect(ctx, c.Servers())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := mutex.New(s, path)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := st.db.(*sql.DB).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	own := *st
	own.db = dc
	return &holder{name: name, st: &own, m: m}
}

// acquire takes h's lock and its fencing token.
func acquire(ctx context.Context, t *testing.T, h *holder) {
	t.Helper()
	var err error
	if h.lease, err = h.m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if h.token, err = h.lease.Fence(ctx); err != nil {
		t.Fatal(err)
	}
}

// startPostgres starts a PostgreSQL server for the test and returns its
// DSN; a missing one skips the test, and fails it under CI=true.
func startPostgres(t *testing.T) string {
	t.Helper()
	dsn, stop, err := postgres.Start(context.Background())
	if errors.Is(err, postgres.ErrMissing) {
		if zktest.InCI() {
			t.Fatalf("%v\n(CI=true: a missing prerequisite is a failure, not a skip)", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return dsn
}
