package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

// created is what a create came to: our node's name ("" when none is
// ours) and whether an answer was lost on the way (then a ghost of ours
// may turn up: see dropGhosts).
type created struct {
	node  string
	lossy bool
}

// create makes our ephemeral sequential node and sets a.node. It runs
// detached (Detach): if ctx ends first, create returns ctx's error and the
// node, once its create is resolved, is deleted in the background.
func (a *attempt) create(ctx context.Context) error {
	c, detached, err := Detach(ctx, a.ep, a.q.log,
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

// createNode creates the node of acquire id in ep, with requests under
// ectx (the epoch's); ctx, the caller's, is checked before each create.
// After a lost answer the node is looked for by id (FindLost) before
// creating again, so we never queue behind our own ghost.
func (q *Queue) createNode(ctx, ectx context.Context, ep *conn.Epoch, id string) (created, error) {
	prefix := q.cfg.Schema.Prefix(id)
	p := zkpath.Join(q.path, prefix)
	data := q.cfg.Data
	if data == nil {
		label, err := Label(ctx) // checked by AcquireGrant
		if err != nil {
			return created{}, err
		}
		data = encodeData(id, q.cfg.Tag, q.Sealed(), label)
	}
	var c created
	parentsMade := false
	for {
		if err := ctx.Err(); err != nil {
			return c, CtxErr(ctx)
		}
		name, err := connlink.Of(ep).Create(ectx, p, data, zk.FlagEphemeral|zk.FlagSequence, q.NodeACL())
		switch {
		case err == nil:
			c.node = zkpath.Base(name)
			return c, nil
		case errors.Is(err, zk.ErrNoNode) && !parentsMade:
			// The lock path (or a parent) does not exist, or its container
			// was reaped: make the parents and try once more.
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

// FindLost looks for the node of acquire id (Find) after a write that may
// have created it lost its answer: its name, or "" when none was made. If
// the search fails while the epoch lives, it goes on in the background
// (Unresolved) and the error matches ErrCreatePending; id must not be used
// again.
func (q *Queue) FindLost(ctx context.Context, ep *conn.Epoch, id string) (string, error) {
	node, err := q.Find(ctx, ep, id)
	switch {
	case err != nil && ep.Err() == nil:
		return "", Unresolved(ep, q.log, err, func(ctx context.Context) error { return q.deleteLost(ctx, ep, id) })
	case err != nil:
		return "", err
	case node != "":
		q.log.Warn("found our node after its answer was lost", zap.String("node", node))
	default:
		q.log.Info("the write was not applied before the connection was lost")
	}
	return node, nil
}

// deleteLost deletes the node of acquire id, if there is one.
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

// Unresolved hands a create whose fate is unknown (err: the search for its
// node failed) to a goroutine that runs resolve until it succeeds or ep
// ends, as Curator's FindAndDeleteProtectedNodeInBackground does, and
// returns err behind ErrCreatePending.
func Unresolved(ep *conn.Epoch, log *zap.Logger, err error, resolve func(context.Context) error) error {
	go RetryUntilDone(ep, log, "deleting the node of a create whose answer was lost", resolve)
	return fmt.Errorf("%w: %w", ErrCreatePending, err)
}

// Find looks for the node of acquire id under the queue's path in ep (by
// the schema's prefix for id, or the id in the data), after a sync so that
// it sees every write of our session: "" if there is none or no path.
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

// ours reports whether child name is a node created for acquire id: by
// its name when the schema puts the id in it, else by its data.
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
	d, _ := decodeData(b)
	return d.ID == id, nil
}

// dropGhosts deletes, from the server and the cache, any node of our
// acquire id other than a.node: a create whose lost answer was applied after
// all. ZooKeeper's ordering makes this next to impossible (Find syncs), but
// queueing behind a ghost of our own would wait for our session to end. For
// schemas that keep the id in the name this costs nothing; for others it
// reads data, and only after a lost answer.
func (a *attempt) dropGhosts(ctx context.Context) error {
	prefix := a.q.cfg.Schema.Prefix(a.id)
	if !a.lossy && !strings.Contains(prefix, a.id) {
		return nil
	}
	for _, c := range append([]Contender(nil), a.cs...) {
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
