package queue

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/nodelabel"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

// Created is what a create of our node came to: its name ("" if none),
// whether an answer was lost on the way (a ghost may turn up:
// dropGhosts), and OpsFailed when an op before it in CreateBehind's
// transaction failed with zk.ErrNoNode.
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
// transaction behind ops if any (semaphoremutex: the internal lock's
// release), checking ctx before each try. After a lost answer it looks for
// the node (FindLost) before trying again.
func (q *Queue) CreateBehind(ctx, ectx context.Context, ep *conn.Epoch, id string, ops ...any) (Created, error) {
	p := zkpath.Join(q.path, q.cfg.Schema.Prefix(id))
	data := q.cfg.Data
	if data == nil {
		label, err := nodelabel.From(ctx) // checked by the acquire
		if err != nil {
			return Created{}, err
		}
		data = locknode.EncodeData(id, q.cfg.Tag, q.Sealed(), label)
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

// FindLost finds the node of acquire id after a create lost its answer:
// "" when none was made. If the search fails while the epoch lives, it
// goes on in the background (bg.Unresolved), deleting the node, and the
// error matches lock.ErrCreatePending; id must not be used again.
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

// Find returns the node of acquire id, "" if none; it syncs first so that
// it sees every write of our session.
func (q *Queue) Find(ctx context.Context, ep *conn.Epoch, id string) (string, error) {
	if err := connlink.Of(ep).Sync(ctx, q.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", err
	}
	names, _, err := connlink.Of(ep).Children(ctx, q.path)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
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
	if _, ok := q.cfg.Schema.Parse(name); !ok {
		return false, nil
	}
	if strings.Contains(prefix, id) {
		return true, nil
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
	prefix := a.q.cfg.Schema.Prefix(a.id)
	if !a.lossy && !strings.Contains(prefix, a.id) {
		return nil // the id is in the data: read only after a lost answer
	}
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
