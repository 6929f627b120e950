package conn_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// stockRow stands for a row of a database outside ZooKeeper that checks
// fencing tokens. It keeps the greatest token it has seen and refuses an
// older one, on the read and on the write: a holder claims the row with
// its token as it reads what it will write from, so a stale holder cannot
// write once a newer one has read. In SQL, as examples/seckill does, the
// claim is
//
//	UPDATE shops SET fence_zxid = $1, fence_pass = $2
//	WHERE id = $3 AND (fence_zxid < $1 OR (fence_zxid = $1 AND fence_pass <= $2))
//	RETURNING stock
//
// and the write carries the same condition; no row means refused. Checked
// on the write alone, the condition would accept alice's write below (bob
// has read but not yet written), and bob's write would then overwrite it.
type stockRow struct {
	mu    sync.Mutex // guards the fields below
	stock int
	fence conn.Fence // the greatest token the row has seen
}

// claim registers token and returns the stock.
func (r *stockRow) claim(token conn.Fence) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token.Compare(r.fence) < 0 {
		return 0, errors.New("refused: a later holder has claimed the row")
	}
	r.fence = token
	return r.stock, nil
}

// sell writes stock read-1 under the same condition.
func (r *stockRow) sell(token conn.Fence, read int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token.Compare(r.fence) < 0 {
		return errors.New("refused: a later holder has claimed the row")
	}
	r.stock, r.fence = read-1, token
	return nil
}

// A holder that pauses past its session (a GC pause, a stopped VM) wakes
// up still believing it holds the lock; meanwhile the server has expired
// its session and granted the lock to another. Only the store can stop
// its write: by the lease's fencing token, registered on the row before
// the holder reads from it.
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
	aliceRead, err := row.claim(token)
	fmt.Println("alice reads:", aliceRead, err)
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
	bobRead, err := row.claim(bobToken)
	fmt.Println("bob reads:", bobRead, err)

	// Alice wakes and writes, with the token of her grant, before bob.
	fmt.Println("alice sells:", row.sell(token, aliceRead))
	fmt.Println("bob sells:", row.sell(bobToken, bobRead))
	fmt.Println("stock:", row.stock)

	_ = aliceLock.Release(ctx) // a lost lease: nothing to release
	_ = bobLock.Release(ctx)
	// Output:
	// alice reads: 10 <nil>
	// bob reads: 10 <nil>
	// alice sells: refused: a later holder has claimed the row
	// bob sells: <nil>
	// stock: 9
}
