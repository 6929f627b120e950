package semaphoremutex_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// zkServers is ZK_SERVERS, or a local server.
func zkServers() []string {
	servers := strings.Split(os.Getenv("ZK_SERVERS"), ",")
	if servers[0] == "" {
		servers = []string{"127.0.0.1:2181"}
	}
	return servers
}

// Example takes the mutex in one goroutine and releases it in another, as
// a handle-owned lock allows, writing under its protection in between. It
// needs a ZooKeeper server (ZK_SERVERS, default 127.0.0.1:2181), so it is
// compiled but not run by go test.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, zkServers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	m, err := semaphoremutex.New(sess, "/examples/reports")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := m.Acquire(ctx) // ctx's deadline is the timeout
	if err != nil {
		log.Fatal(err)
	}

	done := make(chan struct{})
	go func() { // the worker the lock was taken for releases it
		defer close(done)
		defer func() {
			if err := m.Release(context.WithoutCancel(ctx)); err != nil {
				log.Print(err)
			}
		}()
		token, err := lease.Fence(ctx) // fencing token: grows with every grant
		if err != nil {
			log.Print(err)
			return
		}
		// Commits only while the lease is ours.
		_, err = lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/examples/reports", Data: []byte(fmt.Sprint(token)), Version: -1})
		if err != nil {
			log.Print(err)
			return
		}
		fmt.Println("report written under token", token)
	}()
	<-done
}

// ExampleSemaphore lets at most three processes at a time use a pool.
func ExampleSemaphore() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, zkServers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	sem, err := semaphoremutex.NewSemaphore(sess, "/examples/db-pool", 3)
	if err != nil {
		log.Fatal(err)
	}
	lease, err := sem.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := sem.ReturnLease(context.WithoutCancel(ctx), lease); err != nil {
			log.Print(err)
		}
	}()
	select {
	case <-lease.Lost(): // the session ended: stop using the pool
		log.Print("lease lost: ", lease.Err())
	default:
		holders, err := sem.Holders(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("holding one of %d leases (%d taken)\n", sem.Leases(), len(holders))
	}
}
