// Command session shows the session manager at work: it starts a ZooKeeper
// (or uses ZK_SERVERS), connects, creates an ephemeral node, has the server
// expire the session, and prints every state transition on the way: the
// epoch that held the node ends (Lost), a new one begins (Connected), and the
// node is gone.
//
//	go run ./examples/session
package main

import "github.com/zkrecipes/zkrecipes/examples/internal/demo"

func main() { demo.Main("session", run) }
