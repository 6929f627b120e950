package semaphoremutex

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// take creates our lease node and releases the internal lock in one
// transaction, which commits only while we hold the internal lock. It runs
// detached (bg.Detach): if ctx ends first, the lease node it made, or
// else the internal lock, is released in the background.
func (a *attempt) take(ctx context.Context) error {
	lk, id, noDir, lossy := a.lk, a.id, a.noDir, a.lossy
	r, detached, err := bg.Detach(ctx, a.ep, a.s.log,
		func(ctx, ectx context.Context) (took, error) {
			return a.s.commit(ctx, ectx, a.ep, lk, id, noDir, lossy)
		},
		func(ectx context.Context, r took, _ error) error {
			switch {
			case r.node != "": // the lock node went in the same transaction
				a.s.log.Info("deleting the lease node of an abandoned acquire", zap.String("node", r.node))
				return a.s.leases.Delete(ectx, a.ep, r.node)
			case r.lockGone:
				return nil
			}
			return a.s.lock.Withdraw(ectx, lk)
		})
	if detached {
		a.lk = nil // the background owns it now
		return err
	}
	a.lossy = r.lossy
	switch {
	case r.node != "":
		a.node = r.node
		connlink.Of(a.lk).Released()
		a.lk = nil
		return nil
	case r.lockGone:
		// Deleted by someone else: we may not create a lease node.
		a.s.log.Warn("our internal lock node was deleted by someone else; starting over", zap.String("node", a.lk.Path()))
		connlink.Of(a.lk).Released()
		a.lk = nil
		return errRestart
	}
	return err
}

// took is what a lease transaction came to: our lease node if it committed
// (releasing lk), lockGone if lk's node was deleted by someone else, lossy
// if an answer was lost on the way.
type took struct {
	node     string
	lockGone bool
	lossy    bool
}

// commit runs the lease transaction of take under ectx (the epoch's) until
// it commits or cannot; ctx, the caller's, is checked before each try.
// After a lost answer our lease node is looked for (FindLost) before
// trying again; the lock node's delete makes the transaction one-shot.
func (s *Semaphore) commit(ctx, ectx context.Context, ep *conn.Epoch, lk *conn.Lease, id string, noDir, lossy bool) (took, error) {
	r := took{lossy: lossy}
	p := zkpath.Join(s.leasesPath, leaseSchema.Prefix(id))
	label, err := locknode.Label(ctx) // checked by the internal lock's acquire
	if err != nil {
		return r, err
	}
	data := locknode.EncodeData(id, "", s.lock.Sealed(), label)
	if noDir {
		// leases/ is missing (first use, or reaped): make it.
		if err := connlink.Of(ep).CreateParents(ectx, p); err != nil {
			return r, err
		}
	}
	for tries := 0; ; tries++ {
		if ctx.Err() != nil {
			return r, bg.CtxErr(ctx)
		}
		ops := append(s.unlockOps(lk),
			&zk.CreateRequest{Path: p, Data: data, Acl: s.lock.NodeACL(), Flags: zk.FlagEphemeral | zk.FlagSequence})
		create := len(ops) - 1
		res, err := connlink.Of(ep).Multi(ectx, ops...)
		switch {
		case err == nil:
			r.node = zkpath.Base(res[create].String)
			return r, nil
		case opFailed(res, create, zk.ErrNoNode) && tries == 0:
			// leases/ was reaped between our listing and now.
			if err := connlink.Of(ep).CreateParents(ectx, p); err != nil {
				return r, err
			}
		case opFailed(res, 0, zk.ErrNoNode):
			// Our lock node is gone. After a lost answer, that may be our
			// own first try having committed late.
			if r.lossy {
				node, ferr := s.leases.FindLost(ectx, ep, id)
				if ferr != nil {
					return r, ferr
				}
				r.node = node
			}
			r.lockGone = r.node == ""
			return r, nil
		case errors.Is(err, conn.ErrConnectionLoss) && ep.Err() == nil:
			r.lossy = true
			node, ferr := s.leases.FindLost(ectx, ep, id)
			if ferr != nil || node != "" {
				r.node = node
				return r, ferr
			}
		default:
			return r, err
		}
	}
}

// unlockOps release the internal lock in the lease transaction: the
// engine's ReleaseOps, except with one lease, where the mark would tell the
// next contender that no lease node exists (soleLeaseTag): a plain delete.
func (s *Semaphore) unlockOps(lk *conn.Lease) []any {
	if s.max == 1 {
		return []any{&zk.DeleteRequest{Path: lk.Path(), Version: -1}}
	}
	return s.lock.ReleaseOps(lk.Path())
}

// opFailed reports whether op i of a failed transaction failed with want.
func opFailed(res []zk.MultiResponse, i int, want error) bool {
	return i < len(res) && errors.Is(res[i].Error, want)
}
