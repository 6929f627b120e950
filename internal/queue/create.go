package queue

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"go.uber.org/zap"
)

// create makes our ephemeral sequential node and sets a.node.
//
// The create is never abandoned while in flight: it runs under a context
// that ctx's cancellation does not reach (the epoch still bounds it), so
// that we always learn whether it was applied, and delete the node if ctx
// ended meanwhile. When the answer is lost with the connection, the node
// may exist: we look for it by our unique id before creating again, so a
// lost answer leaves no orphan and we never queue behind our own ghost.
func (a *attempt) create(ctx context.Context) error {
	prefix := a.q.cfg.Schema.Prefix(a.id)
	p := conn.JoinPath(a.q.path, prefix)
	data := encodeData(a.id, a.q.cfg.Tag)
	if a.q.cfg.Data != nil {
		data = a.q.cfg.Data
	}
	cctx := context.WithoutCancel(ctx)
	parentsMade := false
	for {
		if err := ctx.Err(); err != nil {
			return CtxErr(ctx)
		}
		created, err := a.ep.Create(cctx, p, data, zk.FlagEphemeral|zk.FlagSequence, a.q.sess.ACL())
		switch {
		case err == nil:
			a.node = conn.BaseName(created)
			return nil
		case errors.Is(err, zk.ErrNoNode) && !parentsMade:
			// The lock path (or a parent) does not exist, or its container
			// was reaped: make the parents and try once more.
			parentsMade = true
			if err := a.ep.CreateParents(ctx, p); err != nil {
				return err
			}
		case errors.Is(err, conn.ErrConnectionLoss) && a.ep.Err() == nil:
			a.lossy = true
			node, ferr := a.find(cctx, prefix)
			if ferr != nil {
				return ferr
			}
			if node != "" {
				a.q.log.Warn("found our node after its create answer was lost", zap.String("node", node))
				a.node = node
				return nil
			}
			a.q.log.Info("create was not applied before the connection was lost; creating again")
		default:
			return err
		}
	}
}

// find looks for a node of ours, after a create whose answer was lost. It
// syncs first, so that a server that lags behind the leader shows every
// node our session created. It returns "" if there is none, also when the
// lock path itself does not exist (the lost answer was NoNode: first use,
// or its container was reaped), so that the create makes it.
func (a *attempt) find(ctx context.Context, prefix string) (string, error) {
	if err := a.ep.Sync(ctx, a.q.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", err
	}
	names, _, err := a.ep.Children(ctx, a.q.path)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, n := range names {
		ok, err := a.ours(ctx, prefix, n)
		if err != nil {
			return "", err
		}
		if ok {
			return n, nil
		}
	}
	return "", nil
}

// ours reports whether child name is a node created for our acquire id: by
// its name when the schema puts the id in it, else by its data.
func (a *attempt) ours(ctx context.Context, prefix, name string) (bool, error) {
	if !strings.HasPrefix(name, prefix) {
		return false, nil
	}
	if _, ok := a.q.cfg.Schema.Parse(name); !ok {
		return false, nil
	}
	if strings.Contains(prefix, a.id) {
		return true, nil
	}
	b, _, err := a.ep.Get(ctx, conn.JoinPath(a.q.path, name))
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	d, _ := decodeData(b)
	return d.ID == a.id, nil
}

// dropGhosts deletes, from the server and the cache, any node of our
// acquire id other than a.node: a create whose lost answer was applied after
// all. ZooKeeper's ordering makes this next to impossible (find syncs), but
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
		ok, err := a.ours(ctx, prefix, c.Name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		a.q.log.Warn("deleting a ghost of our own node", zap.String("node", c.Name))
		if err := a.ep.Delete(ctx, conn.JoinPath(a.q.path, c.Name), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		a.cs = remove(a.cs, c.Name)
	}
	return nil
}
