// Command leader shows leader.Election at work between three participants,
// alice, bob and carol, each on its own ZooKeeper session, each running
// leader.Run with a function that works only while its ctx lives:
//
//  1. alice leads; the others wait, each watching only its predecessor.
//  2. alice's session is expired by the server (as after a long GC pause):
//     her function's ctx is cancelled, bob takes over with a higher fencing
//     token, and alice's late guarded write is refused.
//  3. bob's process is cut off from ZooKeeper (as if killed: a blackholed
//     connection): the server expires his session after its timeout, his
//     own timer cancels his function, and carol takes over.
//
// Run it with
//
//	go run ./examples/leader
//
// It starts its own ZooKeeper (zktest: Docker or a local install) unless
// ZK_SERVERS is set; its first line (stderr) says which; -h lists the
// environment variables. It exits non-zero if an invariant is violated: two
// leaders at once, a stale write that got through, a token that did not
// grow.
package main

import "github.com/zkrecipes/zkrecipes/examples/internal/demo"

// what is the summary -h prints.
const what = "Three participants elect a leader with leader.Run: the leader's session expires and\n" +
	"then its connection is cut; the next takes over each time (its fencing token grows, a stale write is refused)."

func main() { demo.Main("leader", what, run) }
