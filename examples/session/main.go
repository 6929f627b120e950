// Command session shows the session manager at work: it starts a ZooKeeper
// (or uses ZK_SERVERS), connects, takes a lock (its lease names the epoch)
// and creates an ephemeral node, has the server expire the session, and
// prints every state transition on the way: the epoch that held the node
// ends (Lost) and the lease with it, a new one begins (Connected), and the
// node is gone.
//
//	go run ./examples/session
package main

import "github.com/zkrecipes/zkrecipes/examples/internal/demo"

// what is the summary -h prints.
const what = "Connects, takes a lock and creates an ephemeral node, has the server expire the session and\n" +
	"prints every state transition: the epoch that held the node ends, a new one begins, the node is gone."

func main() { demo.Main("session", what, run) }
