// Command rwlock shows rwlock.RWLock, the distributed read/write lock, with
// three readers (r1, r2, r3) and a writer (w), each on its own ZooKeeper
// session, around a catalog node:
//
//  1. Readers share: r1 and r2 hold the read lock together.
//  2. A writer waits: w queues for the write lock behind them, and r3, who
//     comes after w, waits behind w even though only readers hold the lock
//     (fair: writers do not starve). When r1 and r2 leave, w writes the
//     catalog through its lease (a guarded write, with its fencing token).
//  3. Downgrade: w takes the read lock while it holds the write lock, then
//     lets go of the write lock; r3 gets in and reads beside w what w
//     wrote, and no writer could have slipped in between.
//  4. Lost lock: w takes the write lock again and the server expires its
//     session: the lease's Lost channel closes, its guarded write is
//     refused, and r1, reading next with a higher token, finds the catalog
//     unchanged.
//
// Run it with
//
//	go run ./examples/rwlock
//
// It starts its own ZooKeeper (zktest: Docker or a local install) unless
// ZK_SERVERS is set; its first line (stderr) says which; -h lists the
// environment variables. It exits non-zero if a writer ever shares the lock, a
// queued reader overtakes a writer, a lost lock's write gets through or a
// fencing token does not grow.
package main

import "github.com/zkrecipes/zkrecipes/examples/internal/demo"

// what is the summary -h prints.
const what = "Three readers and a writer around a catalog with rwlock.RWLock: readers share,\n" +
	"a writer waits (fair), downgrade, and a write lock lost to an expired session."

func main() { demo.Main("rwlock", what, run) }
