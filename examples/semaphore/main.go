// Command semaphore shows semaphoremutex.Semaphore, a counting semaphore
// over ZooKeeper (the layout of Curator's InterProcessSemaphoreV2): five
// workers, each on its own ZooKeeper session, share two leases, as they
// would share two licences of a paid service or two slots of a machine.
//
//  1. Each worker runs three jobs, each under a lease. At most two workers
//     are ever inside; every lease carries its own fencing token, and each
//     job records its result through its lease (a guarded write, which
//     commits only while the lease is held).
//  2. Lost lease: w1 and w2 hold the two leases and w3 waits. The server
//     expires w1's session: its lease's Lost channel closes, its guarded
//     write is refused, and w3 gets the freed lease with a higher token,
//     while w2 keeps its own.
//
// Run it with
//
//	go run ./examples/semaphore
//
// It starts its own ZooKeeper (zktest: Docker or a local install) unless
// ZK_SERVERS is set; its first line (stderr) says which; -h lists the
// environment variables. It exits non-zero if more than two workers are ever
// inside, two leases share a token, or a lost lease's write gets through.
package main

import "github.com/zkrecipes/zkrecipes/examples/internal/demo"

// what is the summary -h prints.
const what = "Five workers share two leases of semaphoremutex.Semaphore; one lease is lost to an\n" +
	"expired session and handed on with a higher fencing token."

func main() { demo.Main("semaphore", what, run) }
