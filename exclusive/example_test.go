package exclusive_test

import (
	"context"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
)

// The lock is a lease: watch Lost while working, and write through
// GuardedWrite so that a write can only land while the lock is held.
// (Not run: it needs a ZooKeeper at 127.0.0.1:2181.)
func Example() {
	ctx := context.Background()
	sess, err := conn.Connect(ctx, []string{"127.0.0.1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	lock, err := exclusive.New(sess, "/app/locks/report")
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
	if _, err := lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/app/report", Data: []byte("done"), Version: -1}); err != nil {
		log.Print("not written: ", err) // matches conn.ErrLeaseLost if the lock was lost
	}
}
