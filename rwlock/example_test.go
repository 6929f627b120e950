package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// servers are the addresses of the ZooKeeper the examples run against
// (TestMain starts one); in a program, your ensemble's.
func servers() []string { return testzk.Servers() }

// Read under the shared lock, write under the exclusive one (a guarded
// write that commits only while the lock is held), and downgrade: keep
// reading what was written without letting another writer in.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Create(ctx, "/example-catalog", []byte("v1"), 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}

	rw, err := rwlock.New(sess, "/example-locks/catalog")
	if err != nil {
		log.Fatal(err)
	}

	// Many processes may read at once.
	if _, err := rw.ReadLock().Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("reading")
	if err := rw.ReadLock().Release(context.WithoutCancel(ctx)); err != nil {
		log.Fatal(err)
	}

	// One writes, through the lease: the write commits only while the lock
	// is still ours.
	lease, err := rw.WriteLock().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/example-catalog", Data: []byte("v2"), Version: -1}); err != nil {
		log.Fatal(err) // matches conn.ErrLeaseLost if we lost the lock: nothing was written
	}
	fmt.Println("written")

	// Downgrade: take the read lock, then let go of the write lock. Other
	// readers may join; no writer gets in until we release the read lock.
	if _, err := rw.ReadLock().Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	if err := rw.WriteLock().Release(context.WithoutCancel(ctx)); err != nil {
		log.Fatal(err)
	}
	data, _, err := sess.Get(ctx, "/example-catalog")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reading what we wrote:", string(data))
	if err := rw.ReadLock().Release(context.WithoutCancel(ctx)); err != nil {
		log.Fatal(err)
	}
	// Output:
	// reading
	// written
	// reading what we wrote: v2
}
