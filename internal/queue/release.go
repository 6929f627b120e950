package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

// Release deletes the lease's node (with the handover mark where
// Config.MarkRelease says) and marks the lease released. nil once the node
// is gone; ErrReleasePending (and the cause) when the delete's outcome is
// unknown while the session lives, a goroutine then deleting it until it
// is gone or the epoch ends; any other error leaves everything as it was.
func (q *Queue) Release(ctx context.Context, l *conn.Lease) error {
	return q.release(ctx, l, q.cfg.MarkRelease && q.Sealed())
}

// Withdraw is Release without the handover mark, whatever
// Config.MarkRelease says: the waiter behind sees a plain deletion, and
// learns nothing from it. For a holder that gives its grant back without
// having done what its Config.Tag promises to the next of its kind.
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
	if err != nil && !errors.Is(err, ErrReleasePending) {
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

// handoverMark is the data a First holder's node is given in the
// transaction that deletes it.
var handoverMark = []byte("released")

// ReleaseOps are the operations that release the First holder's node p in
// a multi: on a sealed node, the handover mark (at version 0) then the
// delete; on a revocable one, a plain delete (package doc, "The handover
// mark"). The first op fails with zk.ErrNoNode when p is gone.
func (q *Queue) ReleaseOps(p string) []any {
	del := &zk.DeleteRequest{Path: p, Version: -1}
	if !q.Sealed() {
		return []any{del}
	}
	return []any{&zk.SetDataRequest{Path: p, Data: handoverMark, Version: 0}, del}
}

// handOver releases a First holder's node with ReleaseOps, falling back to
// a plain delete when the node is not as we created it or the connection
// was lost under the transaction (conn retries a delete, not a multi, and
// a node the retry finds gone may be the transaction's doing). gone
// reports that the node was found gone: deleted by someone else.
func (q *Queue) handOver(ctx context.Context, ep *conn.Epoch, p string) (gone bool, err error) {
	_, err = connlink.Of(ep).Multi(ctx, q.ReleaseOps(p)...)
	if done, gone, err := q.settle(ctx, ep, p, err, false); done {
		return gone, err
	}
	if errors.Is(err, conn.ErrConnectionLoss) {
		return false, q.deleteNode(ctx, ep, p)
	}
	return q.deleteOwn(ctx, ep, p)
}

// deleteOwn deletes the node p of a lease being released; gone reports
// that the delete found it gone (deleted by someone else, or after a lost
// answer by its own first attempt, which a retry cannot tell apart).
func (q *Queue) deleteOwn(ctx context.Context, ep *conn.Epoch, p string) (gone bool, err error) {
	err = connlink.Of(ep).Delete(ctx, p, -1)
	_, gone, err = q.settle(ctx, ep, p, err, errors.Is(err, conn.ErrConnectionLoss))
	return gone, err
}

// deleteNode deletes node p of epoch ep: nil when it is gone (or goes with
// the ended epoch); ErrReleasePending when the outcome is unknown and a
// background deleter took over; the server's error otherwise.
func (q *Queue) deleteNode(ctx context.Context, ep *conn.Epoch, p string) error {
	_, err := q.deleteOwn(ctx, ep, p)
	return err
}

// settle decides the outcome err of a request deleting node p of epoch ep:
// nil once p is gone (gone: found so) or goes with the ended epoch;
// ErrReleasePending when ctx ended or unknown is set, a background deleter
// taking over. Otherwise done is false and err is returned as it is.
func (q *Queue) settle(ctx context.Context, ep *conn.Epoch, p string, err error, unknown bool) (done, gone bool, _ error) {
	switch {
	case err == nil || errors.Is(err, zk.ErrNoNode):
		q.known().left(ep, zkpath.Base(p))
		return true, err != nil, nil
	case ep.Err() != nil:
		return true, false, nil // ephemeral: it goes with the session
	case unknown || ctx.Err() != nil:
		go q.deleteInBackground(ep, p)
		return true, false, fmt.Errorf("%w: %w", ErrReleasePending, err)
	}
	return false, false, err
}

// Delete deletes node name (a child of the queue's path) of epoch ep, one
// of ours that no lease stands for (an abandoned acquire's): nil when it
// is gone or goes with the ended epoch; ErrReleasePending when the outcome
// is unknown and a background deleter took over; the server's error
// otherwise.
func (q *Queue) Delete(ctx context.Context, ep *conn.Epoch, name string) error {
	return q.deleteNode(ctx, ep, zkpath.Join(q.path, name))
}

// deleteInBackground keeps deleting p until it is gone or ep ends
// (RetryUntilDone): no goroutine outlives its session.
func (q *Queue) deleteInBackground(ep *conn.Epoch, p string) {
	RetryUntilDone(ep, q.log.With(zap.String("node", p)), "pending delete", func(ctx context.Context) error {
		if err := connlink.Of(ep).Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	})
}
