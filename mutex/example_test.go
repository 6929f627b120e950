package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// servers are the addresses of the ZooKeeper the examples run against
// (TestMain starts one); in a program, your ensemble's.
func servers() []string { return testzk.Servers() }

// Take the lock, write under its protection, release it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers()) // one per process
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Create(ctx, "/example-orders", nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}

	m, err := mutex.New(sess, "/example-locks/orders")
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
	_, err = lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/example-orders", Data: []byte(fmt.Sprint(token)), Version: -1})
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-lease.Lost():
		log.Print("lock lost: stop working")
	default:
		fmt.Println("written under the lock")
	}
	// Output: written under the lock
}

// TryAcquire does not wait: another process holds the lock.
func ExampleInterProcessMutex_TryAcquire() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder, err := conn.Connect(ctx, servers()) // another process
	if err != nil {
		log.Fatal(err)
	}
	defer holder.Close()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	theirs, err := mutex.New(holder, "/example-locks/report")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := theirs.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	m, err := mutex.New(sess, "/example-locks/report")
	if err != nil {
		log.Fatal(err)
	}
	_, ok, err := m.TryAcquire(ctx)
	fmt.Println("while they hold it:", ok, err)

	if err := theirs.Release(ctx); err != nil {
		log.Fatal(err)
	}
	_, ok, err = m.TryAcquire(ctx)
	fmt.Println("after their release:", ok, err)
	if err := m.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// while they hold it: false <nil>
	// after their release: true <nil>
}
