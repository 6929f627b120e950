package mutex_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// Example takes the lock, writes under its protection and releases it. It
// needs a ZooKeeper server (ZK_SERVERS, default 127.0.0.1:2181), so it is
// compiled but not run by go test.
func Example() {
	servers := strings.Split(os.Getenv("ZK_SERVERS"), ",")
	if servers[0] == "" {
		servers = []string{"127.0.0.1:2181"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers)
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	m, err := mutex.New(sess, "/examples/orders/lock")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := m.Acquire(ctx) // ctx's deadline is the timeout
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := m.Release(context.WithoutCancel(ctx)); err != nil {
			log.Print(err)
		}
	}()

	token, err := lease.Fence(ctx) // fencing token: grows with every grant
	if err != nil {
		log.Fatal(err)
	}
	// Commits only while the lock is ours.
	_, err = lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/examples/orders", Data: []byte(fmt.Sprint(token)), Version: -1})
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-lease.Lost():
		log.Print("lock lost: stop working")
	default:
		fmt.Println("held with token", token)
	}
}
