// Package cohort is the in-process handoff of the exclusive recipes: the
// goroutines of one session that contend for one lock share one ZooKeeper
// contender (docs/design.md, "In-process handoff (lock cohorting)").
package cohort

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/report"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// ErrNotHolder: Release of a lease that is not the cohort's current grant.
var ErrNotHolder = fmt.Errorf("cohort: not the current holder: %w", lock.ErrNotHeld)

// Bound limits how long the node stays in the process: MaxPasses local
// handoffs, or Budget since it was granted (<= 0: none).
type Bound = lockopt.Bound

// Remote is the recipe's own acquire and release of one ZooKeeper
// contender; it reports no wait (the Contender does). Release's error
// matching lock.ErrReleasePending means released; any other leaves it held.
type Remote struct {
	Acquire    func(ctx context.Context) (*conn.Lease, error)
	TryAcquire func(ctx context.Context) (*conn.Lease, bool, error)
	Release    func(ctx context.Context, l *conn.Lease) error
	// Holds is the recipe the grants' holds are reported under, and so
	// their handoffs; "" is the kind's (semaphoremutex's are semaphore's).
	Holds string
}

// Key identifies a cohort in its session; Kind names the recipe and what
// of its configuration makes its nodes differ ("mutex/revocable").
type Key struct {
	Kind  string
	Path  string
	Bound Bound
}

// Handle is one recipe handle's access to its cohort. Safe for concurrent use.
type Handle struct {
	sess   *conn.Session
	key    Key
	remote Remote
}

// New returns the handle of a recipe handle on sess.
func New(sess *conn.Session, key Key, remote Remote) (*Handle, error) {
	if b := key.Bound; b.MaxPasses < 1 || b.Budget < 0 {
		return nil, fmt.Errorf("lock.WithLocalHandoff(%d, %v): at least one pass and a budget of 0 (none) or more: %w", b.MaxPasses, b.Budget, conn.ErrInvalidArgument)
	}
	if remote.Holds == "" {
		remote.Holds = recipeOf(key.Kind)
	}
	return &Handle{sess: sess, key: key, remote: remote}, nil
}

// state is what a cohort is doing with its node.
type state int

const (
	idle      state = iota // no node, no holder, no waiter: removed from the map
	acquiring              // one goroutine acquires the node (remote)
	held                   // a local holder holds the node
	releasing              // the last holder deletes the node
)

// cohort is the shared state of the handles of one Key in one session.
type cohort struct {
	mu      sync.Mutex                               // guards the fields below
	st      state                                    // idle only once removed from the map (dead)
	node    *conn.Lease                              // the remote lease, while held
	free    func(context.Context, *conn.Lease) error // Remote.Release of node's acquirer's handle
	holder  *conn.Lease                              // the current local grant, while held
	passes  int                                      // local handoffs on node
	since   time.Time                                // when node was granted
	waiters []*waiter                                // local waiters, first come first
}

// waiter is one queued goroutine; its channel (buffered) gets exactly one
// wake: a grant, or nil for the turn to acquire the node.
type waiter struct{ ch chan *conn.Lease }

// Acquire returns a grant: a new node or a local handoff. On error nothing
// is held or left behind (a local waiter has no node, watch or goroutine).
func (h *Handle) Acquire(ctx context.Context) (*conn.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, bg.CtxErr(ctx)
	}
	c, ours := h.find()
	if ours {
		l, _, err := h.acquireNode(ctx, c, true)
		return l, err
	}
	w := &waiter{ch: make(chan *conn.Lease, 1)}
	c.waiters = append(c.waiters, w)
	c.watch()
	c.mu.Unlock()
	select {
	case wk := <-w.ch:
		switch {
		case wk != nil && ctx.Err() != nil:
			// A grant at the moment ctx ended is given up, as the queue does.
			return nil, h.giveUp(ctx, c, wk, bg.CtxErr(ctx))
		case wk != nil:
			return wk, nil
		}
		l, _, err := h.acquireNode(ctx, c, true) // our turn to acquire the node
		return l, err
	case <-ctx.Done():
		return nil, h.leave(ctx, c, w, bg.CtxErr(ctx))
	case <-connlink.Of(h.sess).Closing():
		return nil, h.leave(ctx, c, w, conn.ErrClosed)
	}
}

// find returns h's cohort, locked, or a new one whose node the caller acquires.
func (h *Handle) find() (c *cohort, ours bool) {
	m := connlink.Of(h.sess).Shared()
	for {
		v, loaded := m.LoadOrStore(h.key, &cohort{st: acquiring})
		c = v.(*cohort)
		if !loaded {
			return c, true
		}
		c.mu.Lock()
		if c.st != idle {
			return c, false
		}
		c.mu.Unlock() // retired after we loaded it: look again
	}
}

// leave takes waiter w out of c's queue and returns err; if w was woken
// meanwhile, the grant or the turn is given on.
func (h *Handle) leave(ctx context.Context, c *cohort, w *waiter, err error) error {
	c.mu.Lock()
	removed := c.remove(w)
	c.mu.Unlock()
	if removed {
		return err
	}
	return h.giveUp(ctx, c, <-w.ch, err)
}

// giveUp gives on a wake its waiter does not take, and returns err.
func (h *Handle) giveUp(ctx context.Context, c *cohort, wk *conn.Lease, err error) error {
	if wk != nil {
		rctx, cancel := bg.GraceContext(ctx, bg.Grace)
		defer cancel()
		_ = h.Release(rctx, wk) // a pending delete goes on in the background
		return err
	}
	c.mu.Lock()
	c.handOn(h)
	c.mu.Unlock()
	return err
}

// TryAcquire returns a grant if the lock is free in this process and remotely.
func (h *Handle) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, bg.CtxErr(ctx)
	}
	c, ours := h.find()
	if ours {
		return h.acquireNode(ctx, c, false)
	}
	c.mu.Unlock()
	return nil, false, nil // held or being acquired in the process
}

// acquireNode acquires the node for c (acquiring, the caller's) and grants
// it to the caller as pass 0.
func (h *Handle) acquireNode(ctx context.Context, c *cohort, wait bool) (*conn.Lease, bool, error) {
	var (
		l   *conn.Lease
		ok  = true
		err error
	)
	if wait {
		l, err = h.remote.Acquire(ctx)
	} else {
		l, ok, err = h.remote.TryAcquire(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || !ok {
		c.handOn(h)
		return nil, false, err
	}
	c.st, c.node, c.free, c.passes, c.since = held, l, h.remote.Release, 0, time.Now()
	c.holder = connlink.Of(l).Local(0)
	c.watch()
	return c.holder, true, nil
}

// watch sets the node's watch (Lost) once a local waiter may get the node,
// so that a node deleted by someone else is not passed on (locked).
func (c *cohort) watch() {
	if c.st == held && len(c.waiters) > 0 {
		c.node.Lost()
	}
}

// passable reports whether the node may go to a local waiter (locked):
// only where a remote grant could be made (node not known deleted, epoch
// live, not suspended), with no revoke request seen, within the bound.
func (c *cohort) passable(h *Handle) bool {
	b := h.key.Bound
	return len(c.waiters) > 0 && !c.dead() && h.sess.State() != conn.Suspended &&
		!connlink.Of(c.node).RevokeSeen() &&
		c.passes < b.MaxPasses && (b.Budget <= 0 || time.Since(c.since) < b.Budget)
}

// dead reports whether the node is known gone (epoch ended, or lease lost).
func (c *cohort) dead() bool {
	return c.node.Epoch().Err() != nil || c.node.Err() != nil
}

// handOn gives the turn to acquire the node to the first waiter, or, with
// none, retires c (locked; c has no node).
func (c *cohort) handOn(h *Handle) {
	c.node, c.holder, c.free = nil, nil, nil
	if len(c.waiters) > 0 {
		w := c.waiters[0]
		c.waiters = c.waiters[1:]
		c.st = acquiring
		w.ch <- nil
		return
	}
	c.st = idle
	connlink.Of(h.sess).Shared().CompareAndDelete(h.key, c)
}

// remove takes w out of the queue (locked); false if it was woken already.
func (c *cohort) remove(w *waiter) bool {
	i := slices.Index(c.waiters, w)
	if i >= 0 {
		c.waiters = slices.Concat(c.waiters[:i], c.waiters[i+1:])
	}
	return i >= 0
}

// Release ends grant l, passing the node to the next local waiter if
// passable, else releasing it remotely, once l's guarded writes in flight
// are answered (later ones are refused). If ctx ends first, it finishes
// then and Release returns lock.ErrReleasePending.
func (h *Handle) Release(ctx context.Context, l *conn.Lease) error {
	c, err := h.holding(l)
	if err != nil {
		return err
	}
	if done := connlink.Of(l).HoldWrites(false); done != nil {
		defer done()
		return h.release(ctx, c, l)
	}
	held := make(chan func(), 1)
	go func() { held <- connlink.Of(l).HoldWrites(true) }()
	select {
	case done := <-held:
		defer done()
		return h.release(ctx, c, l)
	case <-ctx.Done():
		connlink.Of(l).Released() // refuses new writes at once
		go func() {
			defer (<-held)()
			_ = h.release(context.WithoutCancel(ctx), c, l) // bounded by the epoch
		}()
		return fmt.Errorf("%w: %w", lock.ErrReleasePending, ctx.Err())
	}
}

// holding returns l's cohort if l is its holder.
func (h *Handle) holding(l *conn.Lease) (*cohort, error) {
	v, ok := connlink.Of(h.sess).Shared().Load(h.key)
	if !ok {
		return nil, ErrNotHolder
	}
	c := v.(*cohort)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st != held || c.holder != l {
		return nil, ErrNotHolder
	}
	return c, nil
}

func (h *Handle) release(ctx context.Context, c *cohort, l *conn.Lease) error {
	c.mu.Lock()
	if c.st != held || c.holder != l {
		c.mu.Unlock()
		return ErrNotHolder
	}
	if c.passable(h) {
		w := c.waiters[0]
		c.waiters = c.waiters[1:]
		c.passes++
		connlink.Of(l).Released() // refused before the next grant exists
		c.holder = connlink.Of(c.node).Local(int64(c.passes))
		w.ch <- c.holder
		c.mu.Unlock()
		report.Lock(h.sess, metrics.Lock{Event: metrics.LockHandoff, Recipe: h.remote.Holds, Path: h.key.Path})
		return nil
	}
	c.st = releasing
	node, free := c.node, c.free
	c.mu.Unlock()

	err := free(ctx, node) // through the handle that acquired it
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && !errors.Is(err, lock.ErrReleasePending) && !c.dead() {
		c.st = held // still ours: the caller may release again
		return err
	}
	connlink.Of(l).Released()
	c.handOn(h)
	return err
}

// Waiting is the number of goroutines queued locally for h's cohort. For tests.
func (h *Handle) Waiting() int {
	v, ok := connlink.Of(h.sess).Shared().Load(h.key)
	if !ok {
		return 0
	}
	c := v.(*cohort)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// Contender is how a recipe handle gets its grants: through its cohort
// (with a Bound) or straight from its remote lock.
type Contender struct {
	co     *Handle // nil without local handoff
	via    Remote  // co's methods, or the remote lock's
	sess   *conn.Session
	recipe string // kind up to its first "/", for the Lock hook
	path   string
}

// NewContender returns the contender of a recipe handle on sess, through
// the cohort of Key{kind, path, *bound} when bound is not nil.
func NewContender(sess *conn.Session, kind, path string, bound *Bound, remote Remote) (Contender, error) {
	c := Contender{via: remote, sess: sess, recipe: recipeOf(kind), path: path}
	if bound == nil {
		return c, nil
	}
	h, err := New(sess, Key{Kind: kind, Path: path, Bound: *bound}, remote)
	if err != nil {
		return Contender{}, err
	}
	c.co, c.via = h, Remote{Acquire: h.Acquire, TryAcquire: h.TryAcquire, Release: h.Release}
	return c, nil
}

// recipeOf is the recipe in a cohort kind ("mutex/revocable": "mutex").
func recipeOf(kind string) string {
	name, _, _ := strings.Cut(kind, "/")
	return name
}

// Acquire returns a grant, reporting the whole wait once (report.Meter).
func (c Contender) Acquire(ctx context.Context) (*conn.Lease, error) {
	done := report.Meter(c.sess, c.recipe, c.path)
	l, err := c.via.Acquire(ctx)
	done(l != nil, err)
	return l, err
}

// TryAcquire returns a grant if one is free now, reporting as Acquire.
func (c Contender) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	done := report.Meter(c.sess, c.recipe, c.path)
	l, ok, err := c.via.TryAcquire(ctx)
	done(ok, err)
	return l, ok, err
}

// Unmetered is c's Acquire and TryAcquire unreported, for a recipe that
// reports a longer wait itself.
func (c Contender) Unmetered() Remote { return c.via }

// Release ends grant l: ErrNotHolder if not the cohort's current grant.
func (c Contender) Release(ctx context.Context, l *conn.Lease) error {
	return c.via.Release(ctx, l)
}

// Waiting is Handle.Waiting, 0 without local handoff. For tests.
func (c Contender) Waiting() int {
	if c.co == nil {
		return 0
	}
	return c.co.Waiting()
}
