package conn_test

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
	"github.com/zkrecipes/zkrecipes/zktest"
)

// servers are the addresses of the ZooKeeper the examples run against
// (TestMain starts one); in a program, your ensemble's.
func servers() []string { return testzk.Servers() }

// One Session per process; its current Epoch reads and writes nodes.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	_, err = sess.Create(ctx, "/example-config", []byte("v1"), 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}
	if _, err := sess.Set(ctx, "/example-config", []byte("v2"), -1); err != nil {
		log.Fatal(err)
	}
	data, _, err := sess.Get(ctx, "/example-config")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(data))
	// Output: v2
}

// A guarded write commits only while the lock is held: once the session
// that holds it has expired, the same write is refused by the ensemble,
// whatever the client believes.
func ExampleLease_GuardedWrite() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Create(ctx, "/example-stock", []byte("10"), 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}

	m, err := mutex.New(sess, "/example-locks/stock")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Release(context.WithoutCancel(ctx))
	set := &zk.SetDataRequest{Path: "/example-stock", Data: []byte("9"), Version: -1}
	_, err = lease.GuardedWrite(ctx, set)
	fmt.Println("while held:", err)

	// The server expires the session (as after a long partition or pause).
	if err := zktest.ExpireEpoch(ctx, servers()[0], lease.Epoch()); err != nil {
		log.Fatal(err)
	}
	<-lease.Lost()
	_, err = lease.GuardedWrite(ctx, set)
	fmt.Println("after expiry, lease lost:", errors.Is(err, conn.ErrLeaseLost))
	// Output:
	// while held: <nil>
	// after expiry, lease lost: true
}
