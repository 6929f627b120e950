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

// take creates our lease node and releases the internal lock in one
// transaction: hand our lock node over (Queue.ReleaseOps: mark and delete
// it, so the next contender takes the internal lock with no request), and
// create "_c_<id>-lease-<seq>". It
// commits only while our lock node exists, i.e. while we hold the internal
// lock, so no lease node of ours is ever created outside it.
//
// The transaction is never abandoned while in flight: it runs under a
// context that ctx's cancellation does not reach (the epoch still bounds
// it), so we always learn whether it committed. When its answer is lost
// with the connection, our lease node is looked for by our id (in its name)
// before trying again; the lock node's delete makes the transaction
// one-shot, so a late commit of a first try and a second try can never
// both create a node.
func (a *attempt) take(ctx context.Context) error {
	prefix := leaseSchema.Prefix(a.id)
	p := conn.JoinPath(a.s.leasesPath, prefix)
	data := nodeData(a.id)
	cctx := context.WithoutCancel(ctx)
	if a.noDir {
		// leases/ does not exist yet (first use, or its container was
		// reaped): make it, or the transaction fails.
		if err := a.ep.CreateParents(ctx, p); err != nil {
			return err
		}
	}
	for tries := 0; ; tries++ {
		ops := append(a.s.lock.ReleaseOps(a.lk.Path()),
			&zk.CreateRequest{Path: p, Data: data, Acl: a.s.lock.NodeACL(), Flags: zk.FlagEphemeral | zk.FlagSequence})
		create := len(ops) - 1
		res, err := a.ep.Multi(cctx, ops...)
		switch {
		case err == nil:
			a.taken(conn.BaseName(res[create].String))
			return nil
		case opFailed(res, create, zk.ErrNoNode) && tries == 0:
			// leases/ was reaped between our listing and now.
			if err := a.ep.CreateParents(ctx, p); err != nil {
				return err
			}
		case opFailed(res, 0, zk.ErrNoNode):
			// Our lock node is gone. After a lost answer, that may be our
			// own first try having committed late.
			if a.lossy {
				node, ferr := a.find(cctx, prefix)
				if ferr != nil {
					return ferr
				}
				if node != "" {
					a.taken(node)
					return nil
				}
			}
			// Deleted by someone else: we no longer hold the internal
			// lock, so we may not create a lease node. Start over.
			a.s.log.Warn("our internal lock node was deleted by someone else; starting over", zap.String("node", a.lk.Path()))
			a.lk.Released()
			a.lk = nil
			return errRestart
		case errors.Is(err, conn.ErrConnectionLoss) && a.ep.Err() == nil:
			a.lossy = true
			node, ferr := a.find(cctx, prefix)
			if ferr != nil {
				return ferr
			}
			if node != "" {
				a.s.log.Warn("found our lease node after the answer was lost", zap.String("node", node))
				a.taken(node)
				return nil
			}
			a.s.log.Info("lease transaction was not applied before the connection was lost; trying again")
		default:
			return err
		}
	}
}

// taken records that the transaction committed: our lease node is node and
// the internal lock is released.
func (a *attempt) taken(node string) {
	a.node = node
	a.lk.Released()
	a.lk = nil
}

// opFailed reports whether op i of a failed transaction failed with want.
func opFailed(res []zk.MultiResponse, i int, want error) bool {
	return i < len(res) && errors.Is(res[i].Error, want)
}

// find looks for our lease node after a transaction whose answer was lost,
// syncing first so that a lagging server shows what our session did.
func (a *attempt) find(ctx context.Context, prefix string) (string, error) {
	if err := a.ep.Sync(ctx, a.s.leasesPath); err != nil {
		return "", err
	}
	names, _, err := a.ep.Children(ctx, a.s.leasesPath)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
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
