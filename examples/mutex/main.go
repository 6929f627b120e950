// Command mutex shows mutex.InterProcessMutex, the fair, reentrant
// distributed lock, at work between two workers, alice and bob, each on its
// own ZooKeeper session:
//
//  1. Contention: both add 1 to a shared counter node five times, each time
//     under the lock (read, add, guarded write); the counter ends at 10.
//  2. Reentrancy: alice takes the lock twice on one goroutine and gets the
//     same lease; bob's TryAcquire fails and his Acquire queues behind her.
//  3. Lost lock: alice's session is expired by the server while she holds
//     the lock (as after a long GC pause or a partition). Her lease's Lost
//     channel closes, her guarded write to the ledger is refused, bob
//     takes over with a higher fencing token, and a store outside
//     ZooKeeper that checks fencing tokens turns away alice's late write.
//
// Run it with
//
//	go run ./examples/mutex
//
// It starts its own ZooKeeper (zktest: Docker or a local install) unless
// ZK_SERVERS is set; its first line (stderr) says which; -h lists the
// environment variables. Progress goes to stderr, the story to stdout. It exits
// non-zero if an invariant is violated: a lost update, a write that got
// through without the lock, or a fencing token that did not grow.
package main

import "github.com/zkrecipes/zkrecipes/examples/internal/demo"

// what is the summary -h prints.
const what = "Two workers share a counter under mutex.InterProcessMutex: contention, reentrancy,\n" +
	"and a lock lost to an expired session (guarded write refused, fencing token grows)."

func main() { demo.Main("mutex", what, run) }
