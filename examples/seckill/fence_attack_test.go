package main

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
)

// The SQL of docs/safety.md ("A pause after the check"), word for word:
// $1, $2 the token (Zxid, Pass), $3 the row, $4 the new balance or, in the
// one-statement form, the amount added.
const (
	docClaim = `UPDATE accounts SET fence_zxid = $1, fence_pass = $2
  WHERE id = $3 AND (fence_zxid < $1 OR (fence_zxid = $1 AND fence_pass <= $2))
  RETURNING balance`
	docWrite = `UPDATE accounts SET balance = $4, fence_zxid = $1, fence_pass = $2
  WHERE id = $3 AND (fence_zxid < $1 OR (fence_zxid = $1 AND fence_pass <= $2))`
	// "one conditional statement that reads, writes and records the token
	// (`SET balance = balance + $4, fence_zxid = $1, fence_pass = $2 WHERE
	// ...` the same condition)"
	docOneStatement = `UPDATE accounts SET balance = balance + $4, fence_zxid = $1, fence_pass = $2
  WHERE id = $3 AND (fence_zxid < $1 OR (fence_zxid = $1 AND fence_pass <= $2))`
)

// TestFenceAttackOneStatementForm: docs/safety.md offers, "when the work
// fits in SQL", one conditional statement that reads, writes and records
// the token. A statement that only checked the token would let a stale
// holder that claimed the row earlier write over the newer holder's update:
// b (6.0) claims and reads 100, is frozen past its session; c (7.0), the
// next holder, deposits 50 with the one statement; b wakes and writes
// 100-10, which the row must refuse.
func TestFenceAttackOneStatementForm(t *testing.T) {
	for _, db := range []string{"SQLite", "PostgreSQL"} {
		t.Run(db, func(t *testing.T) {
			dsn := ""
			if db == "PostgreSQL" {
				dsn = startPostgres(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := openStore(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.close()
			sdb := st.db.(*sql.DB)
			for _, q := range []string{
				`CREATE TABLE accounts (id TEXT PRIMARY KEY, balance BIGINT NOT NULL,
					fence_zxid BIGINT NOT NULL DEFAULT 0, fence_pass BIGINT NOT NULL DEFAULT 0)`,
				`INSERT INTO accounts (id, balance) VALUES ('acct', 100)`,
			} {
				if _, err := sdb.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			b, c := conn.Fence{Zxid: 6}, conn.Fence{Zxid: 7}
			if c.Compare(b) <= 0 {
				t.Fatal("c's token must be the newer")
			}

			var read int64
			if err := sdb.QueryRowContext(ctx, docClaim, b.Zxid, b.Pass, "acct").Scan(&read); err != nil {
				t.Fatalf("b's claim: %v", err)
			}
			t.Logf("b (token %v) claims the row and reads balance %d, then freezes past its session", b, read)

			res, err := sdb.ExecContext(ctx, docOneStatement, c.Zxid, c.Pass, "acct", 50)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("c's one statement updated %d rows, want 1", n)
			}
			t.Logf("c (token %v), the next holder, deposits 50 with the one statement: accepted", c)

			res, err = sdb.ExecContext(ctx, docWrite, b.Zxid, b.Pass, "acct", read-10)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := res.RowsAffected()
			var bal, fz, fp int64
			if err := sdb.QueryRowContext(ctx, `SELECT balance, fence_zxid, fence_pass FROM accounts WHERE id = 'acct'`).Scan(&bal, &fz, &fp); err != nil {
				t.Fatal(err)
			}
			t.Logf("b wakes and writes balance %d: %d row(s) updated; balance %d, the row's token %#x.%d", read-10, n, bal, fz, fp)
			if n != 0 || bal != 150 {
				t.Errorf("%s: the stale holder b (%v) wrote after the newer holder c (%v): balance %d, want 150 (b refused, c's deposit kept); "+
					"the row's greatest token is %#x.%d, c's was never recorded.\n"+
					"docs/safety.md: \"the resource keeps the greatest token it has seen, from reads as from writes, and refuses an older one\"",
					db, b, c, bal, fz, fp)
			}
		})
	}
}
