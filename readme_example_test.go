package zkrecipes_test

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// open runs once per process: one Session (close it on exit), and the
// lock every request shares.
func open(ctx context.Context, servers []string) (*conn.Session, *mutex.InterProcessMutex, error) {
	// Connect waits for a first session as long as its ctx lets it.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(cctx, servers)
	if err != nil {
		return nil, nil, err
	}
	m, err := mutex.New(sess, "/locks/stock")
	return sess, m, err
}

// sell takes one item from the stock counted in the node /stock.
func sell(ctx context.Context, sess *conn.Session, m *mutex.InterProcessMutex) (left int, err error) {
	lease, err := m.Acquire(ctx) // fair; ctx's deadline is the timeout
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, m.Release(context.WithoutCancel(ctx))) }()

	data, _, err := sess.Get(ctx, "/stock")
	if err != nil {
		return 0, err
	}
	if left, err = strconv.Atoi(string(data)); err != nil {
		return 0, err
	}
	if left == 0 {
		return 0, errors.New("sold out")
	}
	// Commits only while the lock is ours; refused once the lease is lost.
	_, err = lease.GuardedWrite(ctx, &zk.SetDataRequest{Path: "/stock", Data: []byte(strconv.Itoa(left - 1)), Version: -1})
	return left - 1, err
}
