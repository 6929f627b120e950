package leader_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
)

// servers are the addresses of the ZooKeeper the examples run against
// (TestMain starts one); in a program, your ensemble's.
func servers() []string { return testzk.Servers() }

// Run a function while this process leads; its ctx is cancelled the moment
// leadership is no longer safe, and writes through the term's lease commit
// only while we lead.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Create(ctx, "/example-billing", nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}

	e, err := leader.New(sess, "/example-billing-leader", "host-1")
	if err != nil {
		log.Fatal(err)
	}
	err = e.Run(ctx, func(ctx context.Context, lease *conn.Lease) error { // lease: this term's leadership
		fmt.Println("leading")
		// Commits only while we lead.
		_, err := lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/example-billing", Data: []byte("run"), Version: -1})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("resigned") // Run resigns when its function returns
	// Output:
	// leading
	// resigned
}

// Observe reports leader changes; a slow reader gets the latest leader.
func ExampleElection_Observe() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	e, err := leader.New(sess, "/example-reports-leader", "host-1")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := e.Campaign(ctx); err != nil {
		log.Fatal(err)
	}
	changes := e.Observe(ctx) // closed when ctx ends
	fmt.Println("leader:", (<-changes).ID)
	if err := e.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	if who := <-changes; who.Node == "" {
		fmt.Println("no leader")
	}
	// Output:
	// leader: host-1
	// no leader
}
