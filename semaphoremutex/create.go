package semaphoremutex

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/queue"
)

// create makes our ephemeral sequential lease node and sets a.node.
//
// As the engine does for lock nodes, the create is never abandoned while in
// flight: it runs under a context that ctx's cancellation does not reach
// (the epoch still bounds it), so that we always learn whether it was
// applied and delete the node if ctx ended meanwhile. When its answer is
// lost with the connection, the node is looked for by our id (in its name)
// before creating again.
func (a *attempt) create(ctx context.Context) error {
	prefix := leaseSchema.Prefix(a.id)
	p := conn.JoinPath(a.s.leasesPath, prefix)
	data := nodeData(a.id)
	cctx := context.WithoutCancel(ctx)
	parentsMade := false
	for {
		if err := ctx.Err(); err != nil {
			return ctxErr(ctx)
		}
		created, err := a.ep.Create(cctx, p, data, zk.FlagEphemeral|zk.FlagSequence, a.s.sess.ACL())
		switch {
		case err == nil:
			a.node = conn.BaseName(created)
			return nil
		case errors.Is(err, zk.ErrNoNode) && !parentsMade:
			// leases/ does not exist yet, or its container was reaped.
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
				a.s.log.Warn("found our lease node after its create answer was lost", zap.String("node", node))
				a.node = node
				return nil
			}
			a.s.log.Info("lease create was not applied before the connection was lost; creating again")
		default:
			return err
		}
	}
}

// find looks for our lease node after a create whose answer was lost,
// syncing first so that a lagging server shows what our session created.
func (a *attempt) find(ctx context.Context, prefix string) (string, error) {
	if err := a.ep.Sync(ctx, a.s.leasesPath); err != nil {
		return "", err
	}
	names, _, err := a.ep.Children(ctx, a.s.leasesPath)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if _, ok := leaseSchema.Parse(n); ok && strings.HasPrefix(n, prefix) {
			return n, nil
		}
	}
	return "", nil
}

// nodeData is what a lease node says about its holder: the engine's
// NodeData (host, pid, id) as JSON.
func nodeData(id string) []byte {
	b, _ := json.Marshal(queue.NodeData{ID: id, Host: queue.Hostname(), PID: os.Getpid()}) // cannot fail
	return b
}
