// Command seckill is the flash sale (秒杀) of every distributed-lock
// tutorial, run for real: several order-service workers, each on its own
// ZooKeeper session, sell from a stock kept in a SQL database (an SQLite
// file by default, PostgreSQL with -db). A sale reads the stock, spends a
// moment on the order, then writes stock-1 and the order in a transaction
// at the database's default isolation level (SQLite: serializable;
// PostgreSQL: read committed). The read is not in the write's transaction,
// as in the tutorials: inside it, SQLite (whose transactions here take the
// write lock when they begin) would run the sales one at a time, a lock of
// the database's own, while PostgreSQL at read committed would still lose
// updates. Four sales, side by side:
//
//  1. Without a lock, workers that read the same stock sell the same item:
//     the shop sells more than it has (oversold, printed).
//  2. With mutex.InterProcessMutex around each sale, one worker freezes
//     while it holds the lock (as in a GC pause or a stopped VM: nothing
//     reaches ZooKeeper from it), long enough for the server to expire
//     its session and grant the lock to the next worker, which sells the
//     item the frozen one had read. The frozen worker then wakes and
//     writes: an item is sold twice, even with a lock. A lock alone cannot
//     stop a write its holder had already decided on.
//  3. The same, with the lease's fencing token (Lease.Fence) claiming the
//     stock row as the sale reads it: one UPDATE sets the row's token and
//     returns the stock, only if the row has seen no newer token, and the
//     write is conditional in the same way. Two workers freeze in turn:
//     while the first is frozen the next holder sells; while the second
//     is, the next holder reads and then waits for the frozen one's
//     write. Both woken writes are refused (printed), and the shop sells
//     exactly its stock.
//  4. The token checked on the write alone (read, work, then a
//     conditional UPDATE), as tutorials teach it: the first woken write is
//     refused, but the second, made after the next holder read, is
//     accepted, and the next holder's write then overwrites it: an item
//     sold twice (printed). Such a check refuses a stale holder only once
//     a newer one has written; the token must reach the row before the
//     holder reads what it will write from.
//
// Run it with
//
//	go run ./examples/seckill                      # SQLite, in a temporary file
//	go run ./examples/seckill -db postgres         # a PostgreSQL started for the run
//	go run ./examples/seckill -db postgres://...   # your PostgreSQL
//
// It starts its own ZooKeeper (zktest: Docker or a local install) unless
// ZK_SERVERS is set; its first line (stderr) says which; -h lists the
// environment variables. It exits non-zero if a sale does not show what it
// should.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/examples/internal/postgres"
)

// what is the summary -h prints.
const what = "The flash sale (秒杀) against a SQL database: without a lock the workers oversell; with\n" +
	"the mutex alone a holder frozen past its session sells an item twice; with the mutex and\n" +
	"its fencing token claiming the row before the read, the frozen holder's write is refused;\n" +
	"with the token checked on the write alone, an update is lost again."

func main() {
	fs := demo.Flags("seckill", what)
	db := fs.String("db", "", "the database: empty for an SQLite file in a temporary directory; postgres to start\n"+
		"a PostgreSQL server for the run (Debian's postgresql package); or a postgres:// URL")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: exits 0 on -h, 2 on a bad flag
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "seckill: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsn := *db
	stopDB := func() {}
	if dsn == "postgres" {
		var err error
		if dsn, stopDB, err = postgres.Start(ctx); err != nil {
			demo.Fail("seckill", err)
		}
		fmt.Fprintf(os.Stderr, "PostgreSQL: started for this run at %s\n", dsn)
	}
	servers, stop, err := demo.Start(ctx, nil, os.Stderr)
	if err != nil {
		stopDB()
		demo.Fail("seckill", err)
	}
	err = run(ctx, servers, os.Stdout, dsn)
	stop()
	stopDB()
	if err != nil {
		demo.Fail("seckill", err)
	}
}
