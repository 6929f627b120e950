package conn_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// stockRow stands for a row of a database outside ZooKeeper that checks
// fencing tokens: it keeps the greatest token a write has carried and
// takes a write only if its token is not older, in the same step as the
// write. In SQL that is one conditional update, as examples/seckill does:
//
//	UPDATE shops SET stock = $1, fence_zxid = $2, fence_pass = $3
//	WHERE id = $4 AND (fence_zxid < $2 OR (fence_zxid = $2 AND fence_pass <= $3))
//
// and no row updated means refused.
type stockRow struct {
	mu    sync.Mutex // guards the fields below
	stock int
	fence conn.Fence // the greatest token a write has carried
}

func (r *stockRow) sell(token conn.Fence) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token.Compare(r.fence) < 0 {
		return fmt.Errorf("refused: a later holder has written")
	}
	r.stock, r.fence = r.stock-1, token
	return nil
}

// A holder that pauses past its session (a GC pause, a stopped VM) wakes
// up still believing it holds the lock; meanwhile the server has expired
// its session and granted the lock to another. Only the store can stop
// its write: by the lease's fencing token.
func ExampleLease_Fence() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zk, err := zktest.Start(ctx) // a throwaway ZooKeeper: use yours
	if err != nil {
		log.Fatal(err)
	}
	defer zk.Stop()
	alice, err := conn.Connect(ctx, zk.Servers())
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close()
	bob, err := conn.Connect(ctx, zk.Servers())
	if err != nil {
		log.Fatal(err)
	}
	defer bob.Close()
	row := &stockRow{stock: 10}
	path := zk.Root() + "/stock-lock"

	aliceLock, _ := mutex.New(alice, path)
	lease, err := aliceLock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	token, err := lease.Fence(ctx) // taken with the lock, before any work
	if err != nil {
		log.Fatal(err)
	}
	// Alice pauses here; the server expires her session.
	if err := zktest.ExpireEpoch(ctx, zk.Servers()[0], lease.Epoch()); err != nil {
		log.Fatal(err)
	}

	bobLock, _ := mutex.New(bob, path)
	bobLease, err := bobLock.Acquire(ctx) // granted once alice's node is gone
	if err != nil {
		log.Fatal(err)
	}
	bobToken, err := bobLease.Fence(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("bob sells:", row.sell(bobToken))

	// Alice wakes and writes, with the token of her grant.
	fmt.Println("alice sells:", row.sell(token))
	fmt.Println("stock:", row.stock)

	_ = aliceLock.Release(ctx) // a lost lease: nothing to release
	_ = bobLock.Release(ctx)
	// Output:
	// bob sells: <nil>
	// alice sells: refused: a later holder has written
	// stock: 9
}
