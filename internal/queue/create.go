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
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

// created is our node's name ("" if none) and whether an answer was lost
// on the way (a ghost may turn up: dropGhosts).
type created struct {
	node  string
	lossy bool
}

// create makes our node and sets a.node, detached from ctx (bg.Detach).
func (a *attempt) create(ctx context.Context) error {
	c, detached, err := bg.Detach(ctx, a.ep, a.q.log,
		func(ctx, ectx context.Context) (created, error) { return a.q.createNode(ctx, ectx, a.ep, a.id) },
		func(ectx context.Context, c created, _ error) error {
			if c.node == "" {
				return nil
			}
			a.q.log.Info("deleting the node of an abandoned acquire", zap.String("node", c.node))
			return a.q.Delete(ectx, a.ep, c.node)
		})
	if detached {
		return err
	}
	a.lossy = c.lossy
	if err != nil {
		return err
	}
	a.node = c.node
	return nil
}

// createNode creates the node of acquire id under ectx, checking ctx before
// each try. After a lost answer it looks for the node (FindLost) before
// creating again, so we never queue behind our own ghost.
func (q *Queue) createNode(ctx, ectx context.Context, ep *conn.Epoch, id string) (created, error) {
	prefix := q.cfg.Schema.Prefix(id)
	p := zkpath.Join(q.path, prefix)
	data := q.cfg.Data
	if data == nil {
		label, err := locknode.Label(ctx) // checked by AcquireGrant
		if err != nil {
			return created{}, err
		}
		data = locknode.EncodeData(id, q.cfg.Tag, q.Sealed(), label)
	}
	var c created
	parentsMade := false
	for {
		if err := ctx.Err(); err != nil {
			return c, bg.CtxErr(ctx)
		}
		name, err := connlink.Of(ep).Create(ectx, p, data, zk.FlagEphemeral|zk.FlagSequence, q.NodeACL())
		switch {
		case err == nil:
			c.node = zkpath.Base(name)
			return c, nil
		case errors.Is(err, zk.ErrNoNode) && !parentsMade:
			// no lock path, or its container was reaped
			parentsMade = true
			if err := connlink.Of(ep).CreateParents(ectx, p); err != nil {
				return c, err
			}
		case errors.Is(err, conn.ErrConnectionLoss) && ep.Err() == nil:
			c.lossy = true
			node, ferr := q.FindLost(ectx, ep, id)
			if ferr != nil || node != "" {
				c.node = node
				return c, ferr
			}
		default:
			return c, err
		}
	}
}

// FindLost finds the node of acquire id (Find) after a create lost its
// answer: "" when none was made. If the search fails while the epoch
// lives, it goes on in the background (bg.Unresolved) and the error matches
// lock.ErrCreatePending; id must not be used again.
func (q *Queue) FindLost(ctx context.Context, ep *conn.Epoch, id string) (string, error) {
	node, err := q.Find(ctx, ep, id)
	switch {
	case err != nil && ep.Err() == nil:
		return "", bg.Unresolved(ep, q.log, err, func(ctx context.Context) error { return q.deleteLost(ctx, ep, id) })
	case err != nil:
		return "", err
	case node != "":
		q.log.Warn("found our node after its answer was lost", zap.String("node", node))
	default:
		q.log.Info("the write was not applied before the connection was lost")
	}
	return node, nil
}

// deleteLost deletes the node of acquire id, if any.
func (q *Queue) deleteLost(ctx context.Context, ep *conn.Epoch, id string) error {
	node, err := q.Find(ctx, ep, id)
	if err != nil || node == "" {
		return err
	}
	q.log.Info("deleting the node of a create whose answer was lost", zap.String("node", node))
	if err := connlink.Of(ep).Delete(ctx, zkpath.Join(q.path, node), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
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
// Reads data only after a lost answer, for schemas without the id in the
// name.
func (a *attempt) dropGhosts(ctx context.Context) error {
	prefix := a.q.cfg.Schema.Prefix(a.id)
	if !a.lossy && !strings.Contains(prefix, a.id) {
		return nil
	}
	for _, c := range append([]locknode.Contender(nil), a.cs...) {
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
