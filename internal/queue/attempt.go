package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

// attempt is one acquire within one epoch, owned by run's goroutine.
type attempt struct {
	q    *Queue
	ep   *conn.Epoch
	ls   *listings // the session's for the queue's path (join)
	id   string    // unique acquire id: in our node's name or data
	node string    // our node's name, once created

	// cs is the cache: the contenders of our last listing in queue order,
	// minus those seen gone, cut to what the next decisions need (shrink).
	// May be shared with other waiters: never modified.
	cs   []locknode.Contender
	part bool // cs may lack contenders that block us: a grant lists again
	// clearedBy: the contender whose handover grants us even so (at our
	// listing, nothing after it and before ours blocked us).
	clearedBy string

	lossy bool               // a create's answer was lost: look out for a ghost of ours
	stale bool               // the cache changed since a read showed our node: confirm
	own   *async[ownStat]    // a read of our node in flight
	czxid int64              // our node's, when confirm read it
	from  *locknode.NodeData // the data of the node whose handover woke us last
}

// run acquires our node (with wait false only if granted at once). Errors:
// errRestart when the epoch ended, else our node has been deleted first.
func (a *attempt) run(ctx context.Context, wait bool) (Grant, error) {
	defer a.endOwn()
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
		ok, watch := a.q.cfg.Predicate.Decide(a.cs, self)
		w := index(a.cs, watch)
		var err error
		switch {
		case ok && a.part:
			err = a.relist(ctx)
		case ok:
			return a.grant(ctx)
		case w < 0 || w >= self:
			err = fmt.Errorf("%w: predicate named %q to watch from %q", ErrBadRecipe, watch, a.node)
		case !wait:
			a.drop(ctx)
			return Grant{}, nil
		default:
			a.shrink(self, w)
			err = a.await(ctx, watch)
		}
		if err != nil {
			return Grant{}, a.abort(ctx, err)
		}
	}
}

// list fills the cache from a listing sent after this call (listings).
func (a *attempt) list(ctx context.Context) error {
	cs, err := a.ls.list(ctx, a.ep)
	if err != nil {
		return err
	}
	a.listed(cs)
	return a.dropGhosts(ctx)
}

// listed makes a fresh listing, which shows our node, the cache.
func (a *attempt) listed(cs []locknode.Contender) {
	a.cs, a.part, a.clearedBy, a.stale = cs, false, "", false
}

// prelisting is the listing sent right behind our create (docs/design.md,
// "One-commit acquire"): behind or drop must follow.
type prelisting struct {
	stop chan struct{} // closed once the attempt no longer waits for the create's write
	*async[listed]
}

type listed struct {
	cs  []locknode.Contender // shared: see listings
	err error
}

// prelist starts the listing once the epoch's next create request is
// written (ours, unless another went first). Call it right before create.
func (a *attempt) prelist(ctx context.Context) *prelisting {
	written := connlink.Of(a.ep).CreateWritten()
	stop := make(chan struct{})
	return &prelisting{stop, goRead(ctx, func(ctx context.Context) listed {
		select {
		case <-written:
		case <-stop:
			select {
			case <-written: // both ready: the create is on the wire
			default:
				return listed{}
			}
		case <-ctx.Done():
			return listed{}
		}
		cs, err := a.ls.list(ctx, a.ep)
		return listed{cs: cs, err: err}
	})}
}

// drop abandons the listing: its request, if in flight, is cancelled.
func (p *prelisting) drop() {
	close(p.stop)
	p.end()
}

// behind takes the listing as the first if it shows our node (then it was
// answered after our create); otherwise it lists again.
func (a *attempt) behind(ctx context.Context, p *prelisting) error {
	close(p.stop)
	if r := p.wait(); r.err == nil && index(r.cs, a.node) >= 0 {
		a.listed(r.cs)
		return a.dropGhosts(ctx)
	}
	return a.list(ctx)
}

// relist refreshes the cache from the session's view or else a listing.
func (a *attempt) relist(ctx context.Context) error {
	if a.fromView() {
		return a.dropGhosts(ctx)
	}
	return a.list(ctx)
}

// fromView takes the cache from the session's view if that shows our node
// and leaves at most one contender blocking us (settled).
func (a *attempt) fromView() bool {
	self, ok := a.q.cfg.Schema.Parse(a.node)
	if !ok || a.q.opt.Relist {
		return false
	}
	cs, ok := a.ls.before(a.ep, self, maxCopy)
	if !ok || !settled(a.q.cfg.Predicate, cs, a.node) {
		return false
	}
	a.cs, a.part, a.clearedBy = cs, false, ""
	a.unsure()
	return true
}

// maxCopy bounds the contenders shrink copies.
const maxCopy = 64

// shrink cuts the cache, before we wait on cs[w], to cs[w], ours and at
// most the next to watch when that keeps it complete; else cs[w] and ours,
// marked partial. clearedBy is set when a handover of cs[w] would grant us.
func (a *attempt) shrink(self, w int) {
	if a.part || len(a.cs) <= 3 {
		return // already small
	}
	decide := a.q.cfg.Predicate.Decide
	cs := a.cs
	keep := []locknode.Contender{cs[w], cs[self]}
	// rest is cs up to ours without cs[i]; nil if that would copy too much.
	rest := func(cs []locknode.Contender, i, self int) []locknode.Contender {
		switch {
		case i == 0:
			return cs[1 : self+1]
		case self < maxCopy:
			return slices.Concat(cs[:i], cs[i+1:self+1])
		}
		return nil
	}
	complete := false
	if r := rest(cs, w, self); r != nil {
		ok, next := decide(r, len(r)-1)
		if ok {
			complete = true
		} else if j := index(r, next); j >= 0 && j < len(r)-1 {
			if r2 := rest(r, j, len(r)-1); r2 != nil {
				if ok, _ := decide(r2, len(r2)-1); ok {
					keep, complete = append(keep, r[j]), true
				}
			}
		}
	}
	a.clearedBy = ""
	if !complete {
		if ok, _ := decide(cs[w+1:self+1], self-w-1); ok {
			a.clearedBy = cs[w].Name
		}
	}
	locknode.Sort(keep)
	a.cs, a.part = keep, !complete
}

// missing explains why our node is not among the contenders.
func (a *attempt) missing() error {
	if _, ok := a.q.cfg.Schema.Parse(a.node); !ok {
		return fmt.Errorf("%w: schema does not recognise its own node %q", ErrBadRecipe, a.node)
	}
	a.q.log.Warn("our lock node was deleted by someone else; queueing again", zap.String("node", a.node))
	a.node = ""
	return errRestart
}

// await waits until watch, a contender before ours, is gone. A data change
// is a handover only on a node sealed, by data and ACL, when the watch was
// set (docs/design.md, "The handover mark"); else it means "look again".
func (a *attempt) await(ctx context.Context, watch string) error {
	p := zkpath.Join(a.q.path, watch)
	a.from = nil
	seal := readSeal(ctx, a.ep, p)
	defer seal.end()
	if a.stale && a.own == nil {
		a.own = readOwn(ctx, a.ep, zkpath.Join(a.q.path, a.node))
	}
	for {
		data, st, ch, err := connlink.Of(a.ep).GetW(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return a.gone(ctx, watch, false)
		}
		if err != nil {
			return err
		}
		d, _ := locknode.DecodeData(data)
		select {
		case ev := <-ch:
			switch ev.Type {
			case zk.EventNodeDeleted:
				// only a node of our session can go with its end (confirm)
				return a.gone(ctx, watch, st.EphemeralOwner == a.ep.SessionID())
			case zk.EventNodeDataChanged:
				if s := seal.wait(); d.Sealed && st.Version == 0 && s.ok && s.czxid == st.Czxid {
					a.from = &d
					a.handOver(watch)
					return a.gone(ctx, watch, false)
				}
				// Not a handover we can trust: look again.
			case zk.EventNotWatching: // the session's watches were dropped
				if err := bg.WaitEpochEnd(ctx, a.ep); err != nil {
					return err
				}
			}
		case <-ctx.Done():
			bg.Unwatch(a.ep, ch) // no watch of ours is left on the server
			return bg.CtxErr(ctx)
		case <-a.ep.Done():
			return a.ep.Err()
		}
	}
}

// gone records that contender name has left and relists if needed. told:
// a notification said so of our own session's node: a grant must confirm.
func (a *attempt) gone(ctx context.Context, name string, told bool) error {
	a.ls.left(a.ep, name)
	if told {
		a.unsure()
	}
	if a.forget(name) {
		return a.relist(ctx)
	}
	return nil
}

// forget drops name, and those the session knows gone, from the cache, and
// reports whether the next decision needs relist.
func (a *attempt) forget(name string) (relist bool) {
	a.cs = remove(a.cs, name)
	if cs := a.ls.prune(a.ep, a.cs, a.node); len(cs) < len(a.cs) {
		a.cs = cs
		a.unsure()
	}
	// A partial cache kept one entry before ours, now gone: nothing to decide from.
	return a.q.opt.Relist || a.part || !settled(a.q.cfg.Predicate, a.cs, a.node)
}

// settled reports whether at most one contender of cs (ours among them,
// named self) blocks us.
func settled(decide Predicate, cs []locknode.Contender, self string) bool {
	ok, watch := decide.Decide(cs, index(cs, self))
	if ok {
		return true
	}
	rest := remove(cs, watch)
	ok, _ = decide.Decide(rest, index(rest, self))
	return ok
}

// handOver drops holder and everything before it from the cache (all
// gone); if holder is clearedBy, nothing blocks us now.
func (a *attempt) handOver(holder string) {
	if holder == a.clearedBy {
		a.cs, a.part = a.cs[index(a.cs, a.node):], false
	} else if i := index(a.cs, holder); i > 0 {
		a.cs = a.cs[i:]
	}
}

// grant hands out our node as a lease, unless ctx or the epoch ended at
// this moment. A grant on a plain deletion (stale) waits for confirm.
func (a *attempt) grant(ctx context.Context) (Grant, error) {
	if a.stale && a.from == nil {
		if err := a.confirm(ctx); err != nil {
			return Grant{}, a.abort(ctx, err)
		}
	}
	if ctx.Err() != nil {
		return Grant{}, a.abort(ctx, bg.CtxErr(ctx))
	}
	if a.ep.Err() != nil {
		return Grant{}, errRestart
	}
	a.q.log.Debug("acquired", zap.String("node", a.node))
	g := Grant{Lease: connlink.Of(a.ep).NewLease(zkpath.Join(a.q.path, a.node), a.czxid)}
	if a.q.opt.Recipe == "" {
		connlink.Of(g.Lease).Unreported()
	} else {
		connlink.Of(g.Lease).Label(a.q.opt.Recipe, a.q.path)
	}
	if a.from != nil {
		g.HandedOver, g.From = true, *a.from
	}
	return g, nil
}

// confirm reads our node before a grant when stale (docs/design.md, "A
// grant after a plain deletion"); found ours, the lease gets its czxid.
func (a *attempt) confirm(ctx context.Context) error {
	if a.own == nil {
		a.own = readOwn(ctx, a.ep, zkpath.Join(a.q.path, a.node))
	}
	r := a.own.wait()
	a.own = nil
	switch {
	case r.err != nil:
		return r.err
	case !r.found || r.st.EphemeralOwner != a.ep.SessionID():
		a.q.log.Warn("our lock node is gone (deleted, or with our session); queueing again", zap.String("node", a.node))
		a.node = ""
		return errRestart
	}
	a.stale, a.czxid = false, r.st.Czxid
	return nil
}

// unsure marks the cache stale, dropping a read of our node sent before.
func (a *attempt) unsure() {
	a.stale = true
	a.endOwn()
}

// endOwn gives up a read of our node still in flight, if any.
func (a *attempt) endOwn() {
	if a.own != nil {
		a.own.end()
		a.own = nil
	}
}

// abort ends a failed attempt: errRestart if the epoch ended, else our
// node is deleted and err returned.
func (a *attempt) abort(ctx context.Context, err error) error {
	if errors.Is(err, errRestart) || a.ep.Err() != nil {
		return errRestart
	}
	a.drop(ctx)
	return err
}

// drop deletes our node, if any (bg.Settle).
func (a *attempt) drop(ctx context.Context) {
	if a.node == "" {
		return
	}
	node := a.node
	a.node = ""
	bg.Settle(ctx, a.ep, a.q.log, func(ectx context.Context) error { return a.q.Delete(ectx, a.ep, node) })
}

// async is a read on a goroutine of its own, sent beside await's GetW;
// end must follow (wait may come first).
type async[T any] struct {
	res  chan T // buffered: the goroutine never blocks on it
	stop context.CancelFunc
	got  T
	done bool // got is the answer
}

func goRead[T any](ctx context.Context, read func(context.Context) T) *async[T] {
	ctx, stop := context.WithCancel(ctx)
	r := &async[T]{res: make(chan T, 1), stop: stop}
	go func() { r.res <- read(ctx) }()
	return r
}

// wait returns the answer.
func (r *async[T]) wait() T {
	if !r.done {
		r.got, r.done = <-r.res, true
		r.stop()
	}
	return r.got
}

// end gives up the answer; no goroutine of the read is left after it.
func (r *async[T]) end() {
	r.stop()
	r.wait()
}

// ownStat is the answer of readOwn.
type ownStat struct {
	found bool
	st    *zk.Stat
	err   error
}

// readOwn reads our own node p.
func readOwn(ctx context.Context, ep *conn.Epoch, p string) *async[ownStat] {
	return goRead(ctx, func(ctx context.Context) ownStat {
		found, st, err := connlink.Of(ep).Exists(ctx, p)
		return ownStat{found: found, st: st, err: err}
	})
}

// sealed is the answer of readSeal: czxid names the node read, ok whether
// its ACL, never changed, gives WRITE and ADMIN to one digest identity alone.
type sealed struct {
	czxid int64
	ok    bool
}

// readSeal reads the ACL of node p, which await watches.
func readSeal(ctx context.Context, ep *conn.Epoch, p string) *async[sealed] {
	return goRead(ctx, func(ctx context.Context) sealed {
		acl, st, err := connlink.Of(ep).GetACL(ctx, p)
		if err != nil {
			return sealed{}
		}
		return sealed{czxid: st.Czxid, ok: st.Aversion == 0 && soleWriter(acl)}
	})
}

// soleWriter reports whether every entry of acl that gives WRITE or ADMIN
// names one digest identity (Queue.NodeACL when sealed).
func soleWriter(acl []zk.ACL) bool {
	var who *zk.ACL
	for i, e := range acl {
		if e.Perms&(zk.PermWrite|zk.PermAdmin) == 0 {
			continue
		}
		if e.Scheme != "digest" || who != nil && who.ID != e.ID {
			return false
		}
		who = &acl[i]
	}
	return who != nil
}
