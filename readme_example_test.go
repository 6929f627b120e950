package zkrecipes_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// sell sells one item of the stock kept in the node /stock, under the lock
// /locks/orders, and returns how many are left.
func sell(ctx context.Context, servers []string) (left int, err error) {
	sess, err := conn.Connect(ctx, servers)
	if err != nil {
		return 0, err // no session, nothing to close
	}
	defer sess.Close()

	// The node the lock protects: the first seller creates it.
	ep, err := sess.Epoch(ctx)
	if err != nil {
		return 0, err
	}
	_, err = ep.Create(ctx, "/stock", []byte("10"), 0, sess.ACL())
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return 0, err
	}

	m, err := mutex.New(sess, "/locks/orders")
	if err != nil {
		return 0, err
	}
	lease, err := m.Acquire(ctx) // fair, reentrant per goroutine; ctx's deadline is the timeout
	if err != nil {
		return 0, err
	}
	defer func() {
		// Release even if ctx is cancelled by now: the lock node must go.
		err = errors.Join(err, m.Release(context.WithoutCancel(ctx)))
	}()

	data, stat, err := lease.Epoch().Get(ctx, "/stock")
	if err != nil {
		return 0, err
	}
	stock, err := strconv.Atoi(string(data))
	if err != nil {
		return 0, fmt.Errorf("/stock: %w", err)
	}
	if stock == 0 {
		return 0, errors.New("sold out")
	}
	select {
	case <-lease.Lost(): // session expired, node deleted, ...: stop working
		return 0, lease.Err()
	default:
	}
	// Commits only while the lock is ours (lease.Fence(ctx) is the fencing
	// token for stores outside ZooKeeper).
	_, err = lease.GuardedWrite(ctx, &zk.SetDataRequest{
		Path: "/stock", Data: []byte(strconv.Itoa(stock - 1)), Version: stat.Version,
	})
	if err != nil {
		return 0, err
	}
	return stock - 1, nil
}
