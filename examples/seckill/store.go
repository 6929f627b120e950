package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/lib/pq"  // database/sql driver "postgres"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", pure Go

	"github.com/zkrecipes/zkrecipes/conn"
)

// store is the shop's database: a row per sale in shops (its stock, and
// the greatest fencing token a write has carried) and a row per item sold
// in orders. Each of the three runs is a sale of its own (shops.id).
type store struct {
	db        handle
	kind      string // "SQLite" or "PostgreSQL"
	name      string // kind, and its version or file
	isolation string // the database's default isolation level, which every transaction runs at
	postgres  bool
	close     func() error
}

// handle is what the store runs its statements on: the database (a pool),
// or one connection of it, as a worker process of its own would have.
type handle interface {
	rowQuerier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// rowQuerier is a handle or a transaction, for a read of one row.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// openStore opens the database dsn names: "" is a new SQLite file in a
// temporary directory, a postgres:// or postgresql:// URL a PostgreSQL
// server.
func openStore(ctx context.Context, dsn string) (*store, error) {
	st := &store{}
	switch {
	case dsn == "":
		dir, err := os.MkdirTemp("", "seckill-")
		if err != nil {
			return nil, err
		}
		// SQLite runs one writer at a time, so its transactions are
		// serializable: a transaction takes the write lock when it begins
		// (_txlock=immediate), and the workers share one connection
		// instead of polling for the lock (busy_timeout is for anything
		// else that opens the file).
		file := filepath.Join(dir, "seckill.db")
		db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		db.SetMaxOpenConns(1)
		st.db, st.kind, st.name, st.isolation = db, "SQLite", "SQLite ("+file+")", "serializable"
		st.close = func() error { return errors.Join(db.Close(), os.RemoveAll(dir)) }
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			return nil, err
		}
		st.db, st.kind, st.name, st.postgres, st.close = db, "PostgreSQL", "PostgreSQL", true, db.Close
		if err := db.QueryRowContext(ctx, "SHOW default_transaction_isolation").Scan(&st.isolation); err != nil {
			db.Close()
			return nil, fmt.Errorf("postgres: %w", err)
		}
		var v string
		if err := db.QueryRowContext(ctx, "SHOW server_version").Scan(&v); err == nil {
			st.name += " " + strings.Fields(v)[0]
		}
	default:
		return nil, fmt.Errorf("-db %q: want a postgres:// URL, postgres, or nothing for SQLite", dsn)
	}
	for _, ddl := range []string{
		`CREATE TABLE IF NOT EXISTS shops (id TEXT PRIMARY KEY, stock INTEGER NOT NULL,
			fence_zxid BIGINT NOT NULL DEFAULT 0, fence_pass BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE IF NOT EXISTS orders (shop TEXT NOT NULL, item INTEGER NOT NULL, worker TEXT NOT NULL,
			fence_zxid BIGINT NOT NULL DEFAULT 0, fence_pass BIGINT NOT NULL DEFAULT 0)`,
	} {
		if _, err := st.db.ExecContext(ctx, ddl); err != nil {
			st.close()
			return nil, err
		}
	}
	return st, nil
}

// q writes the placeholders ? of query as $1, $2, ... for PostgreSQL.
func (st *store) q(query string) string {
	if !st.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// open puts a sale of stock items on the shelf.
func (st *store) open(ctx context.Context, shop string, stock int) error {
	_, err := st.db.ExecContext(ctx, st.q(`INSERT INTO shops (id, stock) VALUES (?, ?)`), shop, stock)
	return err
}

// remove deletes the sale's rows.
func (st *store) remove(ctx context.Context, shop string) error {
	_, err1 := st.db.ExecContext(ctx, st.q(`DELETE FROM orders WHERE shop = ?`), shop)
	_, err2 := st.db.ExecContext(ctx, st.q(`DELETE FROM shops WHERE id = ?`), shop)
	return errors.Join(err1, err2)
}

// left reads the stock.
func (st *store) left(ctx context.Context, shop string) (int, error) {
	var n int
	err := st.db.QueryRowContext(ctx, st.q(`SELECT stock FROM shops WHERE id = ?`), shop).Scan(&n)
	return n, err
}

// sell records the sale of item left (the stock as read) by worker: in one
// transaction, the stock becomes left-1 and an order names the item.
func (st *store) sell(ctx context.Context, shop string, left int, worker string) error {
	return st.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, st.q(`UPDATE shops SET stock = ? WHERE id = ?`), left-1, shop); err != nil {
			return err
		}
		return st.order(ctx, tx, shop, left, worker, conn.Fence{})
	})
}

// fencedError is a claim or a write refused for its fencing token.
type fencedError struct {
	token, seen conn.Fence
}

func (e *fencedError) Error() string {
	return fmt.Sprintf("refused: fencing token %v is older than %v, the greatest the row has seen", e.token, e.seen)
}

// notOlder is the fencing condition: the row has seen no token newer than
// the one bound to its three placeholders (zxid, zxid, pass); an equal one
// is the same grant again.
const notOlder = `(fence_zxid < ? OR (fence_zxid = ? AND fence_pass <= ?))`

// claim registers the grant token on the sale's row and reads the stock,
// in one statement, before the holder works from what it read: from then
// on the row refuses every older token, so a holder that paused and lost
// its lock cannot write after a newer one has read. A refused claim
// returns a *fencedError.
func (st *store) claim(ctx context.Context, shop string, token conn.Fence) (left int, err error) {
	err = st.db.QueryRowContext(ctx, st.q(`UPDATE shops SET fence_zxid = ?, fence_pass = ?
		WHERE id = ? AND `+notOlder+` RETURNING stock`),
		token.Zxid, token.Pass, shop, token.Zxid, token.Zxid, token.Pass).Scan(&left)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, st.refused(ctx, st.db, shop, token)
	}
	return left, err
}

// sellFenced is sell for the holder of the grant token, under the fencing
// condition in the same statement (no other write comes between the check
// and the update). It is safe only after claim: checked on the write
// alone, the condition refuses a stale holder only if a newer one has
// already written (see TestFenceInterleavings). A refused sale changes
// nothing and returns a *fencedError.
func (st *store) sellFenced(ctx context.Context, shop string, left int, worker string, token conn.Fence) error {
	return st.inTx(ctx, func(tx *sql.Tx) error { return st.sellFencedTx(ctx, tx, shop, left, worker, token) })
}

// sellFencedTx is sellFenced in the transaction tx, which the caller
// commits.
func (st *store) sellFencedTx(ctx context.Context, tx *sql.Tx, shop string, left int, worker string, token conn.Fence) error {
	res, err := tx.ExecContext(ctx, st.q(`UPDATE shops SET stock = ?, fence_zxid = ?, fence_pass = ?
		WHERE id = ? AND `+notOlder),
		left-1, token.Zxid, token.Pass, shop, token.Zxid, token.Zxid, token.Pass)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return st.refused(ctx, tx, shop, token)
	}
	return st.order(ctx, tx, shop, left, worker, token)
}

// refused is the *fencedError for token, with the greatest token the row
// has seen.
func (st *store) refused(ctx context.Context, q rowQuerier, shop string, token conn.Fence) error {
	e := &fencedError{token: token}
	if err := q.QueryRowContext(ctx, st.q(`SELECT fence_zxid, fence_pass FROM shops WHERE id = ?`), shop).Scan(&e.seen.Zxid, &e.seen.Pass); err != nil {
		return err
	}
	return e
}

// order records the sale of item by worker, with the fencing token its
// write carried (zero when not fenced).
func (st *store) order(ctx context.Context, tx *sql.Tx, shop string, item int, worker string, token conn.Fence) error {
	_, err := tx.ExecContext(ctx, st.q(`INSERT INTO orders (shop, item, worker, fence_zxid, fence_pass) VALUES (?, ?, ?, ?, ?)`),
		shop, item, worker, token.Zxid, token.Pass)
	return err
}

// buyer is the worker that sold item first, and the token its write
// carried; "" if nobody has.
func (st *store) buyer(ctx context.Context, shop string, item int) (worker string, token conn.Fence, err error) {
	err = st.db.QueryRowContext(ctx, st.q(`SELECT worker, fence_zxid, fence_pass FROM orders WHERE shop = ? AND item = ? LIMIT 1`), shop, item).
		Scan(&worker, &token.Zxid, &token.Pass)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return worker, token, err
}

// inTx runs f in a transaction at the database's default isolation level
// and commits it if f succeeds.
func (st *store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// audit is what the books say after a sale.
type audit struct {
	sold   int            // orders
	left   int            // the stock column
	items  map[int]int    // item → times sold
	byWork map[string]int // worker → orders
	took   time.Duration  // the sale's duration
}

func (st *store) audit(ctx context.Context, shop string) (audit, error) {
	a := audit{items: map[int]int{}, byWork: map[string]int{}}
	var err error
	if a.left, err = st.left(ctx, shop); err != nil {
		return a, err
	}
	rows, err := st.db.QueryContext(ctx, st.q(`SELECT item, worker FROM orders WHERE shop = ?`), shop)
	if err != nil {
		return a, err
	}
	defer rows.Close()
	for rows.Next() {
		var item int
		var worker string
		if err := rows.Scan(&item, &worker); err != nil {
			return a, err
		}
		a.sold++
		a.items[item]++
		a.byWork[worker]++
	}
	return a, rows.Err()
}
