package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"go.uber.org/zap"
)

// Release deletes the lease's node and marks the lease released, with the
// handover mark if the rule is First, the nodes sealed and their data the
// engine's. lock.ErrReleasePending: the outcome is unknown and a goroutine
// deletes the node until gone or the epoch ends; any other error leaves
// everything as it was.
func (q *Queue) Release(ctx context.Context, l *conn.Lease) error {
	return q.release(ctx, l, q.cfg.Predicate.first && q.cfg.Data == nil && q.Sealed())
}

// Withdraw is Release without the handover mark: for a holder that does
// not keep what its Config.Tag promises, or a node the rule did not grant.
func (q *Queue) Withdraw(ctx context.Context, l *conn.Lease) error {
	return q.release(ctx, l, false)
}

func (q *Queue) release(ctx context.Context, l *conn.Lease, mark bool) error {
	if l == nil {
		return errors.New("queue: release: nil lease")
	}
	connlink.Of(l).Releasing(true)
	var (
		gone bool
		err  error
	)
	if mark {
		gone, err = q.handOver(ctx, l.Epoch(), l.Path())
	} else {
		gone, err = q.deleteOwn(ctx, l.Epoch(), l.Path())
	}
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		connlink.Of(l).Releasing(false)
		return err
	}
	if gone {
		connlink.Of(l).Gone() // deleted by someone else: a loss, not a hold
	}
	connlink.Of(l).Released()
	if err != nil {
		return err
	}
	q.log.Debug("released", zap.String("node", zkpath.Base(l.Path())))
	return nil
}

// handoverMark is the data the release transaction writes.
var handoverMark = []byte("released")

// ReleaseOps release a First holder's node p in a multi: the handover mark
// (at version 0) and the delete if sealed, else a plain delete. The first
// op fails with zk.ErrNoNode when p is gone.
func (q *Queue) ReleaseOps(p string) []any {
	del := &zk.DeleteRequest{Path: p, Version: -1}
	if !q.Sealed() {
		return []any{del}
	}
	return []any{&zk.SetDataRequest{Path: p, Data: handoverMark, Version: 0}, del}
}

// handOver releases with ReleaseOps, falling back to a plain delete when
// the node is not as created or the connection was lost (conn retries a
// delete, not a multi). gone: deleted by someone else.
func (q *Queue) handOver(ctx context.Context, ep *conn.Epoch, p string) (gone bool, err error) {
	_, err = connlink.Of(ep).Multi(ctx, q.ReleaseOps(p)...)
	if done, gone, err := q.settle(ctx, ep, p, err, false); done {
		return gone, err
	}
	lost := errors.Is(err, conn.ErrConnectionLoss) // the multi may have deleted it
	gone, err = q.deleteOwn(ctx, ep, p)
	return gone && !lost, err
}

// deleteOwn deletes a released lease's node p; gone: found gone (by
// someone else, or by a first try whose answer was lost).
func (q *Queue) deleteOwn(ctx context.Context, ep *conn.Epoch, p string) (gone bool, err error) {
	err = connlink.Of(ep).Delete(ctx, p, -1)
	_, gone, err = q.settle(ctx, ep, p, err, errors.Is(err, conn.ErrConnectionLoss))
	return gone, err
}

// settle decides the outcome err of deleting p: nil once p is gone or goes
// with the epoch; lock.ErrReleasePending, a background deleter taking
// over, if ctx ended or unknown; else done is false.
func (q *Queue) settle(ctx context.Context, ep *conn.Epoch, p string, err error, unknown bool) (done, gone bool, _ error) {
	switch {
	case err == nil || errors.Is(err, zk.ErrNoNode):
		q.lists(false).left(ep, zkpath.Base(p))
		return true, err != nil, nil
	case ep.Err() != nil:
		return true, false, nil // ephemeral: it goes with the session
	case unknown || ctx.Err() != nil:
		go q.deleteInBackground(ep, p)
		return true, false, fmt.Errorf("%w: %w", lock.ErrReleasePending, err)
	}
	return false, false, err
}

// Delete deletes child name of ours that no lease stands for (an abandoned
// acquire's), with Release's errors.
func (q *Queue) Delete(ctx context.Context, ep *conn.Epoch, name string) error {
	_, err := q.deleteOwn(ctx, ep, zkpath.Join(q.path, name))
	return err
}

// deleteInBackground deletes p until gone or ep ends (bg.RetryUntilDone).
func (q *Queue) deleteInBackground(ep *conn.Epoch, p string) {
	bg.RetryUntilDone(ep, q.log.With(zap.String("node", p)), "pending delete", func(ctx context.Context) error {
		if err := connlink.Of(ep).Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	})
}
