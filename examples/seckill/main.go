// Command seckill is the flash sale (秒杀) of every distributed-lock
// tutorial, run for real: several order-service workers, each on its own
// ZooKeeper session, sell from one stock counter kept in a ZooKeeper node.
// A sale reads the stock, spends a moment on the order (which widens the
// race) and writes back stock-1 together with an order node, in one
// transaction, as the tutorials' SQL does.
//
//  1. Without a lock, workers that read the same stock each sell the same
//     item: the shop sells more than it has (oversold, printed).
//  2. With mutex.InterProcessMutex around each sale, and the stock node
//     written only through the lease's GuardedWrite (which commits only
//     while the lock is held), it sells exactly the stock, even though one
//     worker's session is expired by the server while it holds the lock:
//     that worker's lease is lost, its guarded write is refused, and it
//     carries on in a new session; nothing is sold twice or lost.
//
// Run it with
//
//	go run ./examples/seckill
//
// It starts its own ZooKeeper (zktest: Docker or a local install) unless
// ZK_SERVERS is set; its first line (stderr) says which; -h lists the
// environment variables. It exits non-zero if the locked sale sells more or
// less than the stock.
package main

import "github.com/zkrecipes/zkrecipes/examples/internal/demo"

// what is the summary -h prints.
const what = "The flash sale (秒杀): without a lock the workers oversell; with the mutex and guarded\n" +
	"writes they sell exactly the stock, even when a worker's session expires mid-sale."

func main() { demo.Main("seckill", what, run) }
