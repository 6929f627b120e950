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

// attempt is one try for a lease, made under the internal lock in its
// epoch (docs/design.md, "The semaphore's wait for a lease"). Owned by the
// goroutine that calls run.
type attempt struct {
	s  *Semaphore
	ep *conn.Epoch
	lk *conn.Lease // the internal lock, until released (then nil)
	id string      // the internal lock node's id, which our lease node carries

	free    bool                       // no lease node can exist: skip the listing (see soleLeaseTag)
	before  []locknode.Contender       // lease nodes from our listing, minus those seen gone
	watches map[string]<-chan zk.Event // data watches set on entries of before
	noDir   bool                       // leases/ did not exist when we listed
	pzxid   int64                      // leases/'s pzxid at our listing (0 if not listed or no leases/)
	lossy   bool                       // a transaction's answer was lost
	node    string                     // our lease node's name, once created
}

func newID() string { return locknode.NewID() }

// run takes a lease, or with wait false takes one only if one is free now
// (nil lease, nil error otherwise). The internal lock is released when run
// returns. Errors: errRestart when the epoch ended or a node of ours
// vanished; otherwise nothing of ours is left.
func (a *attempt) run(ctx context.Context, wait bool) (*conn.Lease, error) {
	if !a.free {
		if err := a.list(ctx); err != nil {
			return nil, a.abort(ctx, err)
		}
	}
	for len(a.before) >= a.s.max {
		if !wait {
			a.unlock(ctx)
			return nil, nil
		}
		if err := a.watch(ctx); err != nil {
			return nil, a.abort(ctx, err)
		}
		if len(a.before) < a.s.max {
			break
		}
		if err := a.await(ctx); err != nil {
			return nil, a.abort(ctx, err)
		}
	}
	if ctx.Err() != nil {
		return nil, a.abort(ctx, bg.CtxErr(ctx))
	}
	if a.s.max == 1 {
		sole, err := a.soleLeaseFresh(ctx)
		if err != nil {
			return nil, a.abort(ctx, err)
		}
		if sole {
			return a.keep()
		}
		// Our lock node's czxid would be older than that grant's token.
		a.s.log.Debug("a lease was granted since we queued: taking a lease node", zap.String("node", a.lk.Path()))
	}
	if err := a.take(ctx); err != nil {
		return nil, a.abort(ctx, err)
	}
	return a.grant(ctx)
}

// keep makes the internal lock our lease (one lease, none taken: holding
// it is holding the lease), unless the epoch ended; run checked ctx.
func (a *attempt) keep() (*conn.Lease, error) {
	if a.ep.Err() != nil {
		return nil, errRestart
	}
	l := a.lk
	a.lk = nil
	a.s.log.Debug("lease acquired: the internal lock", zap.String("node", l.Path()))
	return l, nil
}

// soleLeaseFresh reports whether the internal lock node may be kept as the
// lease with a token above every earlier grant's: no lease node was made
// since it was (docs/design.md, "The semaphore with one lease").
func (a *attempt) soleLeaseFresh(ctx context.Context) (bool, error) {
	if a.free {
		return true, nil
	}
	f, err := a.lk.Fence(ctx)
	if errors.Is(err, conn.ErrLeaseLost) {
		return false, errRestart // our internal lock node is gone
	}
	if err != nil {
		return false, err
	}
	pzxid := a.pzxid
	if a.noDir {
		ok, st, err := connlink.Of(a.ep).Exists(ctx, a.s.path)
		switch {
		case err != nil:
			return false, err
		case !ok:
			return false, errRestart // cannot be: our internal lock node is under it
		}
		pzxid = st.Pzxid
	}
	return pzxid < f.Zxid, nil
}

// list lists the lease nodes once.
func (a *attempt) list(ctx context.Context) error {
	names, st, err := connlink.Of(a.ep).Children(ctx, a.s.leasesPath)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		a.noDir = true
	case err != nil:
		return err
	default:
		a.pzxid = st.Pzxid
	}
	a.before = locknode.Parse(leaseSchema, names)
	return nil
}

// watch makes sure max entries of before are watched, dropping those found
// gone; it stops early once fewer than max entries are left (admitted).
func (a *attempt) watch(ctx context.Context) error {
	if a.watches == nil {
		a.watches = make(map[string]<-chan zk.Event, a.s.max)
	}
	for len(a.watches) < a.s.max && len(a.before) >= a.s.max {
		name := ""
		for _, c := range a.before {
			if _, ok := a.watches[c.Name]; !ok {
				name = c.Name
				break
			}
		}
		_, _, ch, err := connlink.Of(a.ep).GetW(ctx, zkpath.Join(a.s.leasesPath, name))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			a.forget(name)
		case err != nil:
			return err
		default:
			a.watches[name] = ch
		}
	}
	return nil
}

// await waits for one watch to fire and updates before and the watches.
func (a *attempt) await(ctx context.Context) error {
	name, ev, err := a.next(ctx)
	if err != nil {
		return err
	}
	delete(a.watches, name) // a watch fires once
	switch ev.Type {
	case zk.EventNodeDeleted:
		a.forget(name)
	case zk.EventNotWatching:
		// The session expired or is closing: wait for the epoch's end (the
		// watches are set again if it does not come).
		a.watches = nil
		return bg.WaitEpochEnd(ctx, a.ep)
	}
	// A data change: watch it again.
	return nil
}

// unwatch removes our watches from the server when giving up. Admitted, we
// keep them: each fires once when its node goes, at no request.
func (a *attempt) unwatch() {
	for name, ch := range a.watches {
		bg.Unwatch(a.ep, ch)
		delete(a.watches, name)
	}
}

// forget drops name from before (and from the watches).
func (a *attempt) forget(name string) {
	delete(a.watches, name)
	for i, c := range a.before {
		if c.Name == name {
			a.before = append(a.before[:i], a.before[i+1:]...)
			return
		}
	}
}

// grant hands out our lease node, unless ctx ended at this very moment
// (then the lease is given up) or the epoch did (start over).
func (a *attempt) grant(ctx context.Context) (*conn.Lease, error) {
	if ctx.Err() != nil {
		return nil, a.abort(ctx, bg.CtxErr(ctx))
	}
	if a.ep.Err() != nil {
		return nil, errRestart
	}
	a.s.log.Debug("lease acquired", zap.String("node", a.node))
	return connlink.Of(a.ep).NewLease(zkpath.Join(a.s.leasesPath, a.node), 0), nil
}

// abort ends a failed attempt: errRestart if the epoch ended (our nodes go
// with it); else it releases what we hold and returns err.
func (a *attempt) abort(ctx context.Context, err error) error {
	if a.ep.Err() != nil {
		return errRestart
	}
	a.unwatch() // written before the deletes below
	a.drop(ctx)
	a.unlock(ctx)
	return err
}

// unlock releases the internal lock if we still hold it, on a context of
// its own (bg.CleanupContext), with a plain delete (queue.Withdraw): we
// cannot promise the next one-lease contender that no lease node exists.
func (a *attempt) unlock(ctx context.Context) {
	if a.lk == nil {
		return
	}
	rctx, cancel := bg.CleanupContext(ctx, a.ep)
	defer cancel()
	if err := a.s.lock.Withdraw(rctx, a.lk); err != nil {
		a.s.log.Warn("releasing the internal lock", zap.String("node", a.lk.Path()), zap.Error(err))
	}
	a.lk = nil
}

// drop deletes our lease node, if any, under the epoch (bg.Settle): ctx
// may be why we are giving up.
func (a *attempt) drop(ctx context.Context) {
	if a.node == "" {
		return
	}
	node := a.node
	a.node = ""
	bg.Settle(ctx, a.ep, a.s.log, func(ectx context.Context) error { return a.s.leases.Delete(ectx, a.ep, node) })
}
