package leader_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
)

func servers() []string {
	s := strings.Split(os.Getenv("ZK_SERVERS"), ",")
	if s[0] == "" {
		return []string{"127.0.0.1:2181"}
	}
	return s
}

// Example runs a function while this process leads; its ctx is cancelled
// the moment leadership is no longer safe. It needs a ZooKeeper server
// (ZK_SERVERS, default 127.0.0.1:2181), so it is compiled but not run by
// go test.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	e, err := leader.New(sess, "/examples/billing/leader", "host-1")
	if err != nil {
		log.Fatal(err)
	}
	err = e.Run(ctx, func(ctx context.Context) error {
		lease := leader.LeaseFrom(ctx) // this term's leadership
		token, err := lease.Fence(ctx)
		if err != nil {
			return err
		}
		// Commits only while we lead.
		_, err = lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/examples/billing", Data: []byte(fmt.Sprint(token)), Version: -1})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}

// ExampleElection_Observe prints leader changes; a slow reader gets the
// latest leader. Compiled, not run (it needs a ZooKeeper server).
func ExampleElection_Observe() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	e, err := leader.New(sess, "/examples/billing/leader", "watcher")
	if err != nil {
		log.Fatal(err)
	}
	for who := range e.Observe(ctx) { // closed when ctx ends
		if who.Node == "" {
			fmt.Println("no leader")
			continue
		}
		fmt.Println("leader:", who.ID)
	}
}
