package exclusive_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// servers are the addresses of the ZooKeeper the examples run against
// (TestMain starts one); in a program, your ensemble's.
func servers() []string { return testzk.Servers() }

// The lock is a lease: watch Lost while working, and write through
// GuardedWrite so that a write can only land while the lock is held.
func Example() {
	ctx := context.Background()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Create(ctx, "/example-report", nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}

	lock, err := exclusive.New(sess, "/example-locks/report")
	if err != nil {
		log.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lease, err := lock.Acquire(actx)
	if err != nil {
		log.Fatal(err) // matches context.DeadlineExceeded after 10s
	}
	defer lock.Release(ctx)

	select {
	case <-lease.Lost():
		log.Print("lost the lock: ", lease.Err())
		return
	default:
	}
	if _, err := lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/example-report", Data: []byte("done"), Version: -1}); err != nil {
		log.Print("not written: ", err) // matches conn.ErrLeaseLost if the lock was lost
		return
	}
	fmt.Println("report written")
	// Output: report written
}
