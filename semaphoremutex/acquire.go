package semaphoremutex

import (
	"context"
	"errors"
	"reflect"
	"slices"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// errRestart: the epoch ended, or a node of ours was deleted: start over.
var errRestart = errors.New("semaphoremutex: start over")

// attempt is one try for a lease under the internal lock (docs/design.md,
// "The semaphore's wait for a lease"), owned by run's goroutine.
type attempt struct {
	s  *Semaphore
	ep *conn.Epoch
	lk *conn.Lease // the internal lock, until released (then nil)
	id string      // the internal lock node's id, which our lease node carries

	free    bool                       // no lease node can exist (soleLeaseTag): no listing
	before  []locknode.Contender       // lease nodes from our listing, minus those seen gone
	watches map[string]<-chan zk.Event // data watches set on entries of before
	noDir   bool                       // leases/ did not exist when we listed
	pzxid   int64                      // leases/'s at our listing
	node    string                     // our lease node's name, once created
}

// run takes a lease (with wait false only if one is free now) and releases
// the internal lock. Errors: errRestart, or nothing of ours is left.
func (a *attempt) run(ctx context.Context, wait bool) (*conn.Lease, error) {
	defer a.unwatch() // once admitted, the others' leases need no watching
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
	}
	if ctx.Err() != nil {
		return nil, a.abort(ctx, bg.CtxErr(ctx))
	}
	if a.s.max == 1 {
		sole, err := a.soleLeaseFresh(ctx)
		if err != nil {
			return nil, a.abort(ctx, err)
		}
		if sole && a.ep.Err() != nil {
			return nil, errRestart
		}
		if sole { // holding the internal lock is holding the lease
			l := a.lk
			a.lk = nil
			a.s.log.Debug("lease acquired: the internal lock", zap.String("node", l.Path()))
			return l, nil
		}
		// Our lock node's czxid would be older than that grant's token.
		a.s.log.Debug("a lease was granted since we queued: taking a lease node", zap.String("node", a.lk.Path()))
	}
	if err := a.take(ctx); err != nil {
		return nil, a.abort(ctx, err)
	}
	if ctx.Err() != nil { // granted at this very moment: given up
		return nil, a.abort(ctx, bg.CtxErr(ctx))
	}
	if a.ep.Err() != nil {
		return nil, errRestart
	}
	a.s.log.Debug("lease acquired", zap.String("node", a.node))
	return connlink.Of(a.ep).NewLease(zkpath.Join(a.s.leasesPath, a.node), 0), nil
}

// soleLeaseFresh reports whether no lease node was made since the internal
// lock node was, which may then be the lease (docs/design.md, "The
// semaphore with one lease").
func (a *attempt) soleLeaseFresh(ctx context.Context) (bool, error) {
	if a.free {
		return true, nil
	}
	z, err := connlink.Of(a.lk).Zxid(ctx)
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
	return pzxid < z, nil
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
// gone, and waits for one to fire unless fewer than max are left.
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
	if len(a.before) < a.s.max {
		return nil // admitted
	}
	return a.await(ctx)
}

// await waits for one watch to fire (a channel closed without an event
// is "not watching"), ctx or the epoch to end, and updates the attempt.
func (a *attempt) await(ctx context.Context) error {
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a.ep.Done())},
	}
	names := make([]string, 0, len(a.watches))
	for name, ch := range a.watches {
		names = append(names, name)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, v, ok := reflect.Select(cases)
	switch i {
	case 0:
		return bg.CtxErr(ctx)
	case 1:
		return a.ep.Err()
	}
	name := names[i-2]
	delete(a.watches, name) // a watch fires once
	switch {
	case !ok || v.Interface().(zk.Event).Type == zk.EventNotWatching:
		a.watches = nil // set again if the epoch does not end
		return bg.WaitEpochEnd(ctx, a.ep)
	case v.Interface().(zk.Event).Type == zk.EventNodeDeleted:
		a.forget(name)
	}
	return nil // a data change: watch it again
}

// forget drops name from before (and from the watches).
func (a *attempt) forget(name string) {
	delete(a.watches, name)
	a.before = slices.DeleteFunc(a.before, func(c locknode.Contender) bool { return c.Name == name })
}

// unwatch removes the watches still set.
func (a *attempt) unwatch() {
	for name, ch := range a.watches {
		bg.Unwatch(a.ep, ch)
		delete(a.watches, name)
	}
}

// abort ends a failed attempt: errRestart if the epoch ended, else it
// releases what we hold and returns err.
func (a *attempt) abort(ctx context.Context, err error) error {
	if a.ep.Err() != nil {
		return errRestart
	}
	a.unwatch()
	if a.node != "" { // ctx may be why we give up: bg.Settle
		node := a.node
		a.node = ""
		bg.Settle(ctx, a.ep, a.s.log, func(ectx context.Context) error { return a.s.leases.Delete(ectx, a.ep, node) })
	}
	a.unlock(ctx)
	return err
}

// unlock releases the internal lock if we still hold it, with a plain
// delete: no promise to the next one-lease contender.
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

// take creates our lease node and releases the internal lock in one
// transaction, detached (bg.Detach): if ctx ends first, the lease node it
// made, or else the internal lock, is released in the background.
func (a *attempt) take(ctx context.Context) error {
	// The internal lock's release: ReleaseOps, except with one lease, where
	// the mark would tell the next contender that no lease node exists.
	lk, unlock := a.lk, a.s.lock.ReleaseOps(a.lk.Path())
	if a.s.max == 1 {
		unlock = []any{&zk.DeleteRequest{Path: lk.Path(), Version: -1}}
	}
	r, detached, err := bg.Detach(ctx, a.ep, a.s.log,
		func(ctx, ectx context.Context) (queue.Created, error) {
			return a.s.leases.CreateBehind(ctx, ectx, a.ep, a.id, unlock...)
		},
		func(ectx context.Context, r queue.Created, _ error) error {
			switch {
			case r.Node != "": // the lock node went in the same transaction
				a.s.log.Info("deleting the lease node of an abandoned acquire", zap.String("node", r.Node))
				return a.s.leases.Delete(ectx, a.ep, r.Node)
			case r.OpsFailed:
				return nil
			}
			return a.s.lock.Withdraw(ectx, lk)
		})
	switch {
	case detached:
		a.lk = nil // the background owns it now
		return err
	case r.Node != "":
		a.node, err = r.Node, nil
	case r.OpsFailed: // our lock node, deleted by someone else: we may not create a lease node
		a.s.log.Warn("our internal lock node was deleted by someone else; starting over", zap.String("node", a.lk.Path()))
		err = errRestart
	default:
		return err
	}
	connlink.Of(a.lk).Released()
	a.lk = nil
	return err
}
