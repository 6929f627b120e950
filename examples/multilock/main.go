// Command multilock shows multilock.MultiLock: several locks taken as one,
// all or nothing, always in the order of their paths. Two accounts, A and
// B, each guarded by its own mutex, and tellers on separate ZooKeeper
// sessions moving money between them:
//
//  1. Taken one at a time in the order of the transfer, the locks deadlock:
//     the teller moving A→B holds A and waits for B while the one moving
//     B→A holds B and waits for A (both give up after a deadline).
//  2. With a MultiLock each, given the locks in opposite orders, the same
//     tellers make 20 transfers each without a deadlock: the MultiLock
//     takes them in path order. Each transfer writes both balances in one
//     guarded write that checks both lock nodes; money is conserved.
//  3. All or nothing: while an auditor holds B, a MultiLock over A and B
//     with a deadline fails and gives A back.
//  4. Lost: the server expires a teller's session while it holds both
//     locks; MultiLock.Lost closes and its guarded transfer is refused.
//
// Run it with
//
//	go run ./examples/multilock
//
// It starts its own ZooKeeper (zktest: Docker or a local install) unless
// ZK_SERVERS is set; its first line (stderr) says which; -h lists the
// environment variables. It exits non-zero if money is created or lost, if a
// failed MultiLock keeps a lock, or if a lost lock's write gets through.
package main

import "github.com/zkrecipes/zkrecipes/examples/internal/demo"

// what is the summary -h prints.
const what = "Tellers move money between two accounts: one lock at a time deadlocks,\n" +
	"multilock.MultiLock (path order, all or nothing) does not; money is conserved."

func main() { demo.Main("multilock", what, run) }
