// Command session shows the session manager at work: it starts a ZooKeeper
// (or uses ZK_SERVERS), connects, creates an ephemeral node, has the server
// expire the session, and prints every state transition on the way: the
// epoch that held the node ends (Lost), a new one begins (Connected), and the
// node is gone.
//
//	go run ./examples/session
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	fmt.Fprintln(os.Stderr, "starting ZooKeeper (set ZK_SERVERS to use your own)...")
	cluster, err := zktest.Start(ctx)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	fmt.Printf("ZooKeeper at %v (%s)\n", cluster.Servers(), cluster.Backend())

	sess, err := conn.Connect(ctx, cluster.Servers(), conn.WithSessionTimeout(4*time.Second))
	if err != nil {
		return err
	}
	defer sess.Close()
	sub := sess.Subscribe()
	defer sub.Close()

	ep, err := sess.Epoch(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("epoch 1: session 0x%x, timeout %v\n", ep.SessionID(), ep.Timeout())
	node := cluster.Root() + "-hello"
	if _, err := ep.Create(ctx, node, []byte("hi"), zk.FlagEphemeral, sess.ACL()); err != nil {
		return err
	}
	fmt.Printf("created ephemeral %s\n", node)

	fmt.Println("asking the server to expire the session...")
	if err := zktest.ExpireSession(ctx, cluster.Servers()[0], ep.SessionID(), ep.SessionPassword()); err != nil {
		return err
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("transition: %v\n", ev)
		if ev.State == conn.Connected {
			break
		}
	}
	<-ep.Done()
	fmt.Printf("epoch 1 ended: %v\n", ep.Err())

	ep2, err := sess.Epoch(ctx)
	if err != nil {
		return err
	}
	ok, _, err := ep2.Exists(ctx, node)
	if err != nil {
		return err
	}
	fmt.Printf("epoch 2: session 0x%x; %s exists: %v\n", ep2.SessionID(), node, ok)
	if ok {
		return fmt.Errorf("the ephemeral node outlived its session")
	}
	fmt.Printf("requests so far: %v\n", sess.Stats().Requests)
	return nil
}
