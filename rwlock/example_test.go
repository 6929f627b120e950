package rwlock_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// Example reads under the shared lock, writes under the exclusive one (a
// guarded write that commits only while the lock is held), and downgrades:
// it keeps reading what it wrote without letting another writer in. It
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

	rw, err := rwlock.New(sess, "/locks/catalog")
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

	// One writes; its writes go through the lease so that they commit only
	// while the lock is still ours.
	lease, err := rw.WriteLock().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	token, err := lease.Fence(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/catalog", Data: []byte(fmt.Sprint(token)), Version: -1}); err != nil {
		log.Print(err) // conn.ErrLeaseLost: we lost the lock; nothing was written
	}

	// Downgrade: take the read lock, then let go of the write lock. Other
	// readers may join; no writer gets in until we release the read lock.
	if _, err := rw.ReadLock().Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	if err := rw.WriteLock().Release(context.WithoutCancel(ctx)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("reading what we wrote")
	if err := rw.ReadLock().Release(context.WithoutCancel(ctx)); err != nil {
		log.Fatal(err)
	}
}
