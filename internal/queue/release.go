package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/lock"
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
	q.log.Debug("released", zap.String("node", conn.BaseName(l.Path())))
	return nil
}

// handoverMark is the data a First holder's node is given in the
// transaction that deletes it.
var handoverMark = []byte("released")

// ReleaseOps are the operations that release the queue's First holder's
// node p in a multi. Sealed nodes: mark it (version 0: the node as we
// created it), then delete it. The data change is what the waiter behind
// p is notified of, and it tells that waiter that p held the lock, so
// everything before p is gone. Revocable nodes: a plain delete (a data
// change of a revocable node proves nothing to the waiter, and a revoke
// request may have changed its version). The first op fails with
// zk.ErrNoNode when p is gone. A recipe that releases its node inside a
// transaction of its own uses these instead of Release.
func (q *Queue) ReleaseOps(p string) []any {
	del := &zk.DeleteRequest{Path: p, Version: -1}
	if !q.Sealed() {
		return []any{del}
	}
	return []any{&zk.SetDataRequest{Path: p, Data: handoverMark, Version: 0}, del}
}

// Revoke asks the holder of node (a child of the lock path, by name) to
// release: it writes "__REVOKE__" into the node's data, as Curator's
// Revoker.attemptRevoke does; the holder learns it from its lease's
// Revoked channel (a Curator holder, from its RevocationListener). The
// lock is not taken from it: nobody else enters until it releases. A node
// that is gone is nil: nothing is left to revoke.
//
// A sealed node (the default; NodeData.Sealed) is refused with
// lock.ErrNotRevocable, and nothing is written into it, whichever session
// asks. The server alone would refuse only other sessions: a sealed node
// gives its own session every right, and a data change of a sealed node
// is what the waiter behind it takes as its holder's release. So Revoke
// reads the node first and writes only into one that is not sealed, with
// the data version it read: a node that changed in between is read again.
// One read and one write; a node we may not read is not revocable either
// (lock.ErrNotRevocable and zk.ErrNoAuth).
//
// Its errors are the session's as they are (they name the node), or
// lock.ErrNotRevocable in front of the reason; the recipe says "revoke"
// and its lock's path in front.
func (q *Queue) Revoke(ctx context.Context, node string) error {
	ep, err := q.sess.Epoch(ctx)
	if err != nil {
		return err
	}
	p := conn.JoinPath(q.path, node)
	for {
		data, st, err := ep.Get(ctx, p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("%w: %w", lock.ErrNotRevocable, err)
		case err != nil:
			return err
		}
		if d, _ := decodeData(data); d.Sealed {
			return fmt.Errorf("%w: node %s", lock.ErrNotRevocable, p)
		}
		_, err = ep.Set(ctx, p, []byte(revokeMessage), st.Version)
		switch {
		case err == nil || errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // changed since we read it: read it again
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("%w: %w", lock.ErrNotRevocable, err)
		}
		return err
	}
}

// revokeMessage is Curator's LockInternals.REVOKE_MESSAGE.
const revokeMessage = "__REVOKE__"

// handOver releases a First holder's node with ReleaseOps. It falls back
// to a plain delete, whose outcome it then returns, when the node is not as
// we created it (a sealed node can only have been changed by our own
// session, outside the recipes), and when the connection was lost
// under the transaction: conn never retries a multi, but it retries a
// delete, which finds the node gone if the transaction was applied after
// all. The waiter behind then sees a plain deletion and checks its cache,
// as it does for any foreign holder. gone reports that the transaction
// found the node gone: deleted by someone else before.
func (q *Queue) handOver(ctx context.Context, ep *conn.Epoch, p string) (gone bool, err error) {
	_, err = ep.Multi(ctx, q.ReleaseOps(p)...)
	switch {
	case err == nil || errors.Is(err, zk.ErrNoNode):
		q.known().left(ep, conn.BaseName(p))
		return err != nil, nil
	case ep.Err() != nil:
		return false, nil // ephemeral: it goes with the session
	case ctx.Err() != nil:
		go q.deleteInBackground(ep, p)
		return false, fmt.Errorf("%w: %w", ErrReleasePending, err)
	}
	if errors.Is(err, conn.ErrConnectionLoss) {
		// The transaction may have been applied: a node found gone now
		// may be our own doing.
		return false, q.deleteNode(ctx, ep, p)
	}
	return q.deleteOwn(ctx, ep, p)
}

// deleteOwn is deleteNode for the node of a lease being released; gone
// reports that the delete found the node gone: deleted by someone else
// (or, after a connection loss, by its own first attempt, which a retry
// cannot tell apart).
func (q *Queue) deleteOwn(ctx context.Context, ep *conn.Epoch, p string) (gone bool, err error) {
	err = ep.Delete(ctx, p, -1)
	if errors.Is(err, zk.ErrNoNode) {
		q.known().left(ep, conn.BaseName(p))
		return true, nil
	}
	return false, q.deleted(ctx, ep, p, err)
}

// deleteNode deletes node p of epoch ep: nil when it is gone (or goes with
// the ended epoch); ErrReleasePending when the outcome is unknown and a
// background deleter took over; the server's error otherwise.
func (q *Queue) deleteNode(ctx context.Context, ep *conn.Epoch, p string) error {
	return q.deleted(ctx, ep, p, ep.Delete(ctx, p, -1))
}

// deleted is deleteNode's outcome of err, the answer of the delete of p.
func (q *Queue) deleted(ctx context.Context, ep *conn.Epoch, p string, err error) error {
	switch {
	case err == nil || errors.Is(err, zk.ErrNoNode):
		q.known().left(ep, conn.BaseName(p))
		return nil
	case ep.Err() != nil:
		return nil // ephemeral: it goes with the session
	case errors.Is(err, conn.ErrConnectionLoss) || ctx.Err() != nil:
		go q.deleteInBackground(ep, p)
		return fmt.Errorf("%w: %w", ErrReleasePending, err)
	}
	return err
}

// Delete deletes node name (a child of the queue's path) of epoch ep, one
// of ours that no lease stands for (an abandoned acquire's): nil when it
// is gone or goes with the ended epoch; ErrReleasePending when the outcome
// is unknown and a background deleter took over; the server's error
// otherwise.
func (q *Queue) Delete(ctx context.Context, ep *conn.Epoch, name string) error {
	return q.deleteNode(ctx, ep, conn.JoinPath(q.path, name))
}

// deleteInBackground keeps deleting p until it is gone or ep ends
// (RetryUntilDone): no goroutine outlives its session.
func (q *Queue) deleteInBackground(ep *conn.Epoch, p string) {
	RetryUntilDone(ep, q.log.With(zap.String("node", p)), "pending delete", func(ctx context.Context) error {
		if err := ep.Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	})
}
