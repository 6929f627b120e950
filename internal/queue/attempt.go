package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connhook"
	"go.uber.org/zap"
)

// attempt is one acquire within one epoch. Owned by the goroutine that
// calls run.
type attempt struct {
	q    *Queue
	ep   *conn.Epoch
	id   string // unique acquire id: in our node's name or data
	node string // our node's name, once created

	// cs is the cache: the contenders in queue order, from our last
	// listing, minus those seen gone since. See "Deciding from the first
	// listing" in the package documentation.
	cs []Contender

	lossy bool // a create's answer was lost: look out for a ghost of ours

	// from is the data of the node whose handover (a data change) woke us
	// last, nil when the last wake-up was anything else.
	from *NodeData
}

func newID() string { return uuid.NewString() }

// run acquires our node in a.ep (with wait false: only if granted at
// once; a zero Grant otherwise). Errors: errRestart when the epoch ended
// (our node went with it); otherwise our node has been deleted first.
func (a *attempt) run(ctx context.Context, wait bool) (Grant, error) {
	pre := a.prelist(ctx)
	if err := a.create(ctx); err != nil {
		pre.drop()
		return Grant{}, a.abort(ctx, err)
	}
	if err := a.behind(ctx, pre); err != nil {
		return Grant{}, a.abort(ctx, err)
	}
	for {
		self := index(a.cs, a.node)
		if self < 0 {
			return Grant{}, a.abort(ctx, a.missing())
		}
		ok, watch := a.q.cfg.Decide(a.cs, self)
		if ok {
			return a.grant(ctx)
		}
		if w := index(a.cs, watch); w < 0 || w >= self {
			return Grant{}, a.abort(ctx, fmt.Errorf("%w: predicate named %q to watch from %q", ErrBadRecipe, watch, a.node))
		}
		if !wait {
			a.drop(ctx)
			return Grant{}, nil
		}
		if err := a.await(ctx, watch); err != nil {
			return Grant{}, a.abort(ctx, err)
		}
	}
}

// list lists the children once and fills the cache.
func (a *attempt) list(ctx context.Context) error {
	names, _, err := a.ep.Children(ctx, a.q.path)
	if err != nil {
		return err
	}
	a.cs = Parse(a.q.cfg.Schema, names)
	return a.dropGhosts(ctx)
}

// missing explains why our node is not among the contenders.
func (a *attempt) missing() error {
	if _, ok := a.q.cfg.Schema.Parse(a.node); !ok {
		return fmt.Errorf("%w: schema does not recognise its own node %q", ErrBadRecipe, a.node)
	}
	// Deleted by someone else while the session lives: start over.
	a.q.log.Warn("our lock node was deleted by someone else; queueing again", zap.String("node", a.node))
	a.node = ""
	return errRestart
}

// await waits until watch, a contender before ours, is gone, and updates
// the cache. Nothing else is read.
//
// A data change of a sealed node is how a First holder's release
// (ReleaseOps) looks to the one watcher behind it: the node is marked and
// deleted in one transaction, and the data watch fires on the mark. The
// holder had nothing before it, and nothing can join the queue before a
// node that exists, so every cached contender before it is gone too. Only
// the node's own session can change a sealed node (NodeACL), and recipes
// change a node only in that release, so the mark cannot come from anyone
// else. The node is trusted as sealed only if, when we read it with the
// watch, its data was ours with the sealed flag and its data version 0
// (nothing had changed it). Any other node (revocable, or a foreign
// client's: Curator, kazoo, zk.Lock) may be written by anyone, e.g.
// Curator's Revoker: a data change there only means "look again", and the
// node is watched again if it still exists (one more request).
func (a *attempt) await(ctx context.Context, watch string) error {
	p := conn.JoinPath(a.q.path, watch)
	a.from = nil
	for {
		data, st, ch, err := a.ep.GetW(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return a.gone(ctx, watch)
		}
		if err != nil {
			return err
		}
		d, _ := decodeData(data)
		sealed := d.Sealed && st.Version == 0
		select {
		case ev := <-ch:
			switch ev.Type {
			case zk.EventNodeDeleted:
				return a.gone(ctx, watch)
			case zk.EventNodeDataChanged:
				if sealed {
					a.from = &d
					return a.handedOver(ctx, watch)
				}
				// Not a handover we can trust: look again.
			case zk.EventNotWatching: // the session's watches were dropped
				if err := a.waitEpochEnd(ctx); err != nil {
					return err
				}
			}
		case <-ctx.Done():
			Unwatch(a.ep, ch) // no watch of ours is left on the server
			return CtxErr(ctx)
		case <-a.ep.Done():
			return a.ep.Err()
		}
	}
}

// waitEpochEnd follows a "not watching" event (see WaitEpochEnd).
func (a *attempt) waitEpochEnd(ctx context.Context) error { return WaitEpochEnd(ctx, a.ep) }

// gone records that contender name has left the queue, and makes sure the
// next decision costs at most one request. The rest of the cache is what
// our first listing saw; entries may have left since without our knowing.
// If the predicate now grants, no entry matters. If it names one entry to
// watch and would grant once that one is gone, the next GetW checks it (and
// watches it if it is still there). If more than one entry still blocks us,
// checking them one by one would cost a request each (in a FIFO handoff
// they are all gone: our predecessor held the lock), so we list the
// children once instead.
func (a *attempt) gone(ctx context.Context, name string) error {
	a.cs = remove(a.cs, name)
	if a.q.cfg.Relist {
		return a.list(ctx)
	}
	ok, watch := a.q.cfg.Decide(a.cs, index(a.cs, a.node))
	if ok {
		return nil
	}
	rest := remove(slices.Clone(a.cs), watch)
	if ok, _ := a.q.cfg.Decide(rest, index(rest, a.node)); ok {
		return nil
	}
	return a.list(ctx)
}

// handedOver records that holder, a contender before ours granted by First,
// released: it and every contender before it are gone.
func (a *attempt) handedOver(ctx context.Context, holder string) error {
	if i := index(a.cs, holder); i > 0 {
		a.cs = a.cs[i:]
	}
	return a.gone(ctx, holder)
}

// grant hands out our node as a lease, unless ctx ended at this very moment
// (then the grant is given up) or the epoch did (start over).
//
// A grant decided right after a handover (a.from set) follows that
// holder's release with nobody in between: the holder was granted by
// First, we watched the node right before ours, and nothing joins the queue
// before a node that exists. Any other wake-up clears a.from.
func (a *attempt) grant(ctx context.Context) (Grant, error) {
	if ctx.Err() != nil {
		return Grant{}, a.abort(ctx, CtxErr(ctx))
	}
	if a.ep.Err() != nil {
		return Grant{}, errRestart
	}
	p := conn.JoinPath(a.q.path, a.node)
	a.q.log.Debug("acquired", zap.String("node", a.node))
	g := Grant{Lease: connhook.NewLease(a.ep, p).(*conn.Lease)}
	if a.from != nil {
		g.HandedOver, g.From = true, *a.from
	}
	return g, nil
}

// abort ends a failed attempt: errRestart if the epoch ended (our node goes
// with its session); otherwise our node is deleted and err returned.
func (a *attempt) abort(ctx context.Context, err error) error {
	if errors.Is(err, errRestart) || a.ep.Err() != nil {
		return errRestart
	}
	a.drop(ctx)
	return err
}

// drop deletes our node, if any, in the background under the epoch
// (Settle): ctx may be the reason we are giving up, and its caller waits
// for the delete only until Grace after ctx ended.
func (a *attempt) drop(ctx context.Context) {
	if a.node == "" {
		return
	}
	node := a.node
	a.node = ""
	Settle(ctx, a.ep, a.q.log, func(ectx context.Context) error { return a.q.Delete(ectx, a.ep, node) })
}

// CtxErr is ctx's error, and its cause too when one was given.
func CtxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}
