package semaphoremutex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// servers are the addresses of the ZooKeeper the examples run against
// (TestMain starts one); in a program, your ensemble's.
func servers() []string { return testzk.Servers() }

// Take the mutex in one goroutine and release it in another, as a
// handle-owned lock allows, writing under its protection in between.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Create(ctx, "/example-report", nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}

	m, err := semaphoremutex.New(sess, "/example-locks/report")
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
		// Commits only while the lease is ours.
		_, err := lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/example-report", Data: []byte("done"), Version: -1})
		if err != nil {
			log.Print(err)
			return
		}
		fmt.Println("report written")
	}()
	<-done
	// Output: report written
}

// At most three processes at a time use a pool.
func ExampleSemaphore() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	const leases = 3
	sem, err := semaphoremutex.NewSemaphore(sess, "/example-db-pool", leases)
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
		ps, err := sem.Participants(ctx)
		if err != nil {
			log.Fatal(err)
		}
		taken := 0
		for _, p := range ps {
			if p.Holding {
				taken++
			}
		}
		fmt.Printf("holding one of %d leases (%d taken)\n", leases, taken)
	}
	// Output: holding one of 3 leases (1 taken)
}
