package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"go.uber.org/zap"
)

// Created is what a create of our node came to: its name ("" if none),
// whether an answer was lost (look out for a ghost), and OpsFailed when an
// op before it in CreateBehind's transaction failed with zk.ErrNoNode.
type Created struct {
	Node      string
	Lossy     bool
	OpsFailed bool
}

// create makes our node and sets a.node, detached from ctx (bg.Detach).
func (a *attempt) create(ctx context.Context) error {
	c, detached, err := bg.Detach(ctx, a.ep, a.q.log,
		func(ctx, ectx context.Context) (Created, error) { return a.q.CreateBehind(ctx, ectx, a.ep, a.id) },
		func(ectx context.Context, c Created, _ error) error {
			if c.Node == "" {
				return nil
			}
			a.q.log.Info("deleting the node of an abandoned acquire", zap.String("node", c.Node))
			return a.q.Delete(ectx, a.ep, c.Node)
		})
	if !detached {
		a.node, a.lossy = c.Node, c.Lossy // no node on error
	}
	return err
}

// CreateBehind creates the node of acquire id under ectx, in one
// transaction behind ops if any, checking ctx before each try; after a
// lost answer it looks for the node (FindLost) before trying again.
func (q *Queue) CreateBehind(ctx, ectx context.Context, ep *conn.Epoch, id string, ops ...any) (Created, error) {
	p := zkpath.Join(q.path, q.cfg.Schema.Prefix(id))
	data := q.cfg.Data
	if data == nil {
		label, err := locknode.Label(ctx) // checked by the acquire
		if err != nil {
			return Created{}, err
		}
		data = locknode.Encode(locknode.NodeData{ID: id, Tag: q.cfg.Tag, Sealed: q.Sealed(), Label: label, Handoff: q.opt.LocalHandoff})
	}
	create := &zk.CreateRequest{Path: p, Data: data, Acl: q.NodeACL(), Flags: zk.FlagEphemeral | zk.FlagSequence}
	var c Created
	parentsMade := false
	for {
		if err := ctx.Err(); err != nil {
			return c, bg.CtxErr(ctx)
		}
		var name string
		var err error
		if len(ops) == 0 {
			name, err = connlink.Of(ep).Create(ectx, p, data, create.Flags, create.Acl)
		} else if res, merr := connlink.Of(ep).Multi(ectx, append(ops[:len(ops):len(ops)], create)...); merr == nil {
			name = res[len(ops)].String
		} else {
			err = merr
		}
		op, refused := connlink.Of(q.sess).FailedOp(err)
		switch {
		case err == nil:
			c.Node = zkpath.Base(name)
			return c, nil
		case errors.Is(err, zk.ErrNoNode) && (!refused || op == len(ops)) && !parentsMade:
			// no lock path, or its container was reaped
			parentsMade = true
			if err := connlink.Of(ep).CreateParents(ectx, p); err != nil {
				return c, err
			}
		case errors.Is(err, zk.ErrNoNode) && refused && op < len(ops):
			// After a lost answer, that may be our own earlier try, committed late.
			if c.Lossy {
				node, ferr := q.FindLost(ectx, ep, id)
				if ferr != nil {
					return c, ferr
				}
				c.Node = node
			}
			c.OpsFailed = c.Node == ""
			return c, nil
		case errors.Is(err, conn.ErrConnectionLoss) && ep.Err() == nil:
			c.Lossy = true
			node, ferr := q.FindLost(ectx, ep, id)
			if ferr != nil || node != "" {
				c.Node = node
				return c, ferr
			}
		default:
			return c, err
		}
	}
}

// FindLost finds the node of acquire id after a create lost its answer.
// If the search fails while the epoch lives, it goes on in the background,
// deleting the node, and the error matches lock.ErrCreatePending.
func (q *Queue) FindLost(ctx context.Context, ep *conn.Epoch, id string) (string, error) {
	node, err := q.Find(ctx, ep, id)
	switch {
	case err != nil && ep.Err() == nil:
		return "", bg.Unresolved(ep, q.log, err, func(ctx context.Context) error {
			node, err := q.Find(ctx, ep, id)
			if err != nil || node == "" {
				return err
			}
			q.log.Info("deleting the node of a create whose answer was lost", zap.String("node", node))
			if err := connlink.Of(ep).Delete(ctx, zkpath.Join(q.path, node), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			return nil
		})
	case err != nil:
		return "", err
	case node != "":
		q.log.Warn("found our node after its answer was lost", zap.String("node", node))
	default:
		q.log.Info("the write was not applied before the connection was lost")
	}
	return node, nil
}

// Find returns the node of acquire id, "" if none, after a sync.
func (q *Queue) Find(ctx context.Context, ep *conn.Epoch, id string) (string, error) {
	if err := connlink.Of(ep).Sync(ctx, q.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", err
	}
	names, _, err := connlink.Of(ep).Children(ctx, q.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", err
	}
	prefix := q.cfg.Schema.Prefix(id)
	for _, n := range names {
		ok, err := q.ours(ctx, ep, id, prefix, n)
		if err != nil {
			return "", err
		}
		if ok {
			return n, nil
		}
	}
	return "", nil
}

// ours reports whether child name is acquire id's, by name or else data.
func (q *Queue) ours(ctx context.Context, ep *conn.Epoch, id, prefix, name string) (bool, error) {
	if !strings.HasPrefix(name, prefix) {
		return false, nil
	}
	if _, ok := q.cfg.Schema.Parse(name); !ok || strings.Contains(prefix, id) {
		return ok, nil
	}
	b, _, err := connlink.Of(ep).Get(ctx, zkpath.Join(q.path, name))
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	d, _ := locknode.DecodeData(b)
	return d.ID == id, nil
}

// dropGhosts deletes any other node of our acquire id (a lost create
// applied after all): queueing behind it would wait for our session's end.
func (a *attempt) dropGhosts(ctx context.Context) error {
	if !a.lossy {
		return nil // the id is new to this attempt: only a create whose answer was lost can leave a ghost
	}
	prefix := a.q.cfg.Schema.Prefix(a.id)
	for _, c := range a.cs { // remove below makes a new a.cs: cs may be shared
		if c.Name == a.node {
			continue
		}
		ok, err := a.q.ours(ctx, a.ep, a.id, prefix, c.Name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		a.q.log.Warn("deleting a ghost of our own node", zap.String("node", c.Name))
		if err := connlink.Of(a.ep).Delete(ctx, zkpath.Join(a.q.path, c.Name), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		a.cs = remove(a.cs, c.Name)
	}
	return nil
}

// Release deletes the lease's node, with the handover mark if the rule is
// First, the nodes sealed and their data the engine's. ErrReleasePending:
// a goroutine deletes the node until gone or the epoch ends; any other
// error leaves everything as it was.
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
	del := q.deleteOwn
	if mark {
		del = q.handOver
	}
	gone, err := del(ctx, l.Epoch(), l.Path())
	if errors.Is(err, errWithSession) {
		// Not released on the server before the epoch ended: a loss with the
		// epoch's cause, not a hold (Released below finds the epoch ended).
		connlink.Of(l).Releasing(false)
		err = nil
	}
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		connlink.Of(l).Releasing(false)
		return err
	}
	if gone {
		connlink.Of(l).Gone() // deleted by someone else: a loss, not a hold
	}
	connlink.Of(l).Released()
	if err == nil {
		q.log.Debug("released", zap.String("node", zkpath.Base(l.Path())))
	}
	return err
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

// handOver releases with ReleaseOps, falling back to a plain delete (conn
// retries a delete, not a multi). gone: deleted by someone else.
func (q *Queue) handOver(ctx context.Context, ep *conn.Epoch, p string) (gone bool, err error) {
	_, err = connlink.Of(ep).Multi(ctx, q.ReleaseOps(p)...)
	if done, gone, err := q.settle(ctx, ep, p, err, false); done {
		return gone, err
	}
	lost := errors.Is(err, conn.ErrConnectionLoss) // the multi may have deleted it
	gone, err = q.deleteOwn(ctx, ep, p)
	return gone && !lost, err
}

// deleteOwn deletes our node p; gone: found gone.
func (q *Queue) deleteOwn(ctx context.Context, ep *conn.Epoch, p string) (gone bool, err error) {
	err = connlink.Of(ep).Delete(ctx, p, -1)
	_, gone, err = q.settle(ctx, ep, p, err, errors.Is(err, conn.ErrConnectionLoss))
	return gone, err
}

// settle decides the outcome err of deleting p: nil once p is gone or goes
// with the epoch; lock.ErrReleasePending, a background deleter taking over,
// if ctx ended or unknown; else done is false.
func (q *Queue) settle(ctx context.Context, ep *conn.Epoch, p string, err error, unknown bool) (done, gone bool, _ error) {
	switch {
	case err == nil || errors.Is(err, zk.ErrNoNode):
		q.lists(false).left(ep, zkpath.Base(p))
		return true, err != nil && !unknown, nil // unknown: a retry found our lost try's work
	case ep.Err() != nil:
		return true, false, errWithSession // ephemeral: it goes with the session
	case unknown || ctx.Err() != nil:
		go bg.RetryUntilDone(ep, q.log.With(zap.String("node", p)), "pending delete", func(ctx context.Context) error {
			if err := connlink.Of(ep).Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			return nil
		})
		return true, false, fmt.Errorf("%w: %w", lock.ErrReleasePending, err)
	}
	return false, false, err
}

// Delete deletes our child name that no lease stands for, with Release's errors.
func (q *Queue) Delete(ctx context.Context, ep *conn.Epoch, name string) error {
	_, err := q.deleteOwn(ctx, ep, zkpath.Join(q.path, name))
	if errors.Is(err, errWithSession) {
		return nil
	}
	return err
}

// errWithSession: the epoch ended before the delete was confirmed; the node
// goes with the session (Release and Delete return nil for it).
var errWithSession = errors.New("queue: the node goes with the session")
