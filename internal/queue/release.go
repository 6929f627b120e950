package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"go.uber.org/zap"
)

// Release deletes the lease's node and marks the lease released (its Lost
// channel closes; guarded writes through it are refused from now on).
//
// It returns nil once the node is gone: deleted now, deleted before by
// someone else, or going with a session that has ended. If the delete's
// fate is unknown (connection lost, or ctx ended mid-request) while the
// session lives, the release is NOT reported as done: the error matches
// ErrReleasePending (and the cause), and a goroutine keeps deleting the
// node until it is gone or the session's epoch ends. Any other error (the
// server refused the delete, e.g. for lack of permission) leaves the node,
// the lease and the lock as they were.
func (q *Queue) Release(ctx context.Context, l *conn.Lease) error {
	if l == nil {
		return errors.New("queue: release: nil lease")
	}
	err := q.deleteNode(ctx, l.Epoch(), l.Path())
	if err != nil && !errors.Is(err, ErrReleasePending) {
		return fmt.Errorf("queue: release %s: %w", l.Path(), err)
	}
	l.Released()
	if err != nil {
		return fmt.Errorf("queue: release %s: %w", l.Path(), err)
	}
	q.log.Debug("released", zap.String("node", conn.BaseName(l.Path())))
	return nil
}

// deleteNode deletes node p of epoch ep: nil when it is gone (or goes with
// the ended epoch); ErrReleasePending when the outcome is unknown and a
// background deleter took over; the server's error otherwise.
func (q *Queue) deleteNode(ctx context.Context, ep *conn.Epoch, p string) error {
	err := ep.Delete(ctx, p, -1)
	switch {
	case err == nil || errors.Is(err, zk.ErrNoNode):
		return nil
	case ep.Err() != nil:
		return nil // ephemeral: it goes with the session
	case errors.Is(err, conn.ErrConnectionLoss) || ctx.Err() != nil:
		go q.deleteInBackground(ep, p)
		return fmt.Errorf("%w: %w", ErrReleasePending, err)
	}
	return err
}

// deleteInBackground keeps deleting p until it is gone or ep ends. It is
// bound to the epoch's context, so it stops when the session is lost or
// closed: no goroutine outlives its session.
func (q *Queue) deleteInBackground(ep *conn.Epoch, p string) {
	ctx := ep.Context()
	delay := 50 * time.Millisecond
	for {
		err := ep.Delete(ctx, p, -1)
		switch {
		case err == nil || errors.Is(err, zk.ErrNoNode):
			q.log.Info("pending delete done", zap.String("node", p))
			return
		case ep.Err() != nil:
			return
		}
		q.log.Warn("pending delete failed; retrying", zap.String("node", p), zap.Error(err))
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, ep.Timeout())
	}
}
