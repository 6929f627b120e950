package semaphoremutex

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/queue"
)

// attempt is one try for a lease, made while holding the internal lock, in
// the epoch the internal lock was taken in. Owned by the goroutine that
// calls run.
//
// Under the internal lock nobody else creates a lease node, so the lease
// nodes that sort before ours can only leave (a server hands out sequence
// numbers in creation order, and our listing follows our create). The
// attempt therefore lists once and keeps the result: before is a superset
// of the live nodes ahead of ours, and we hold a lease as soon as it has
// fewer than max entries.
//
// While not admitted, it keeps a data watch on max entries of before (all
// of them in the usual case, where before is exactly the max holders): if
// the unwatched ones all left unnoticed, the watched ones alone still keep
// us out, so a release that can admit us is always notified. When a watched
// node goes we drop it: fewer than max entries left means admitted with no
// request; otherwise one more entry is watched (a getW; one that is already
// gone is dropped the same way).
type attempt struct {
	s    *Semaphore
	ep   *conn.Epoch
	id   string // the unique id in our lease node's name
	node string // our lease node's name, once created

	before  []queue.Contender          // lease nodes ahead of ours, in queue order
	watches map[string]<-chan zk.Event // data watches set on entries of before
	lossy   bool                       // a create's answer was lost: look out for a ghost of ours
}

func newID() string { return uuid.NewString() }

// run takes a lease, or with wait false takes one only if it is free now
// (nil lease, nil error otherwise). Errors: errRestart when the epoch ended
// or our node vanished (our node is gone); otherwise our node has been
// deleted first.
func (a *attempt) run(ctx context.Context, wait bool) (*conn.Lease, error) {
	if err := a.create(ctx); err != nil {
		return nil, a.abort(ctx, err)
	}
	if err := a.list(ctx); err != nil {
		return nil, a.abort(ctx, err)
	}
	for len(a.before) >= a.s.max {
		if !wait {
			a.drop(ctx)
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
	return a.grant(ctx)
}

// list lists the lease nodes once and keeps those ahead of ours.
func (a *attempt) list(ctx context.Context) error {
	names, _, err := a.ep.Children(ctx, a.s.leasesPath)
	if err != nil {
		return err
	}
	cs := queue.Parse(leaseSchema, names)
	self := -1
	for i, c := range cs {
		if c.Name == a.node {
			self = i
			break
		}
	}
	if self < 0 {
		// Deleted by someone else while our session lives (an operator):
		// start over, as Curator does.
		a.s.log.Warn("our lease node was deleted by someone else; starting over", zap.String("node", a.node))
		a.node = ""
		return errRestart
	}
	a.before = append([]queue.Contender(nil), cs[:self]...)
	return a.dropGhosts(ctx)
}

// dropGhosts deletes any lease node of our id other than ours: a create
// whose lost answer was applied after all. It would hold a lease until our
// session ended. The id is in the name, so looking costs nothing.
func (a *attempt) dropGhosts(ctx context.Context) error {
	if !a.lossy {
		return nil
	}
	for _, c := range append([]queue.Contender(nil), a.before...) {
		if c.ID != a.id {
			continue
		}
		a.s.log.Warn("deleting a ghost of our own lease node", zap.String("node", c.Name))
		if err := a.ep.Delete(ctx, conn.JoinPath(a.s.leasesPath, c.Name), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		a.forget(c.Name)
	}
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
		_, _, ch, err := a.ep.GetW(ctx, conn.JoinPath(a.s.leasesPath, name))
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
		// go-zookeeper dropped the session's watches: it expired or is
		// closing, so the epoch ends very soon. If it does not within the
		// session timeout, the watches are set again.
		a.watches = nil
		return a.waitEpochEnd(ctx)
	}
	// Any other event (the node's data changed): watch it again.
	return nil
}

// waitEpochEnd follows a "not watching" event.
func (a *attempt) waitEpochEnd(ctx context.Context) error {
	t := time.NewTimer(a.ep.Timeout())
	defer t.Stop()
	select {
	case <-a.ep.Done():
		return a.ep.Err()
	case <-ctx.Done():
		return ctxErr(ctx)
	case <-t.C:
		return nil
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

// grant hands out our node as a lease, unless ctx ended at this very moment
// (then the lease is given up) or the epoch did (start over).
func (a *attempt) grant(ctx context.Context) (*conn.Lease, error) {
	if ctx.Err() != nil {
		return nil, a.abort(ctx, ctxErr(ctx))
	}
	if a.ep.Err() != nil {
		return nil, errRestart
	}
	a.s.log.Debug("lease acquired", zap.String("node", a.node))
	return a.ep.NewLease(conn.JoinPath(a.s.leasesPath, a.node)), nil
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

// drop deletes our lease node, if any, with a context of its own: ctx may
// be the reason we are giving up. The engine's Release does the deleting,
// so a delete whose outcome is unknown goes on in the background until the
// node is gone or the epoch ends.
func (a *attempt) drop(ctx context.Context) {
	if a.node == "" {
		return
	}
	dctx, cancel := cleanupContext(ctx, a.ep)
	defer cancel()
	if err := a.s.leases.Release(dctx, a.ep.NewLease(conn.JoinPath(a.s.leasesPath, a.node))); err != nil {
		a.s.log.Warn("could not delete our lease node after giving up", zap.String("node", a.node), zap.Error(err))
	}
	a.node = ""
}

// cleanupContext is for deleting our own nodes after ctx ended: it keeps
// ctx's values, not its cancellation, and is bounded by the session timeout
// (the epoch bounds every operation as well).
func cleanupContext(ctx context.Context, ep *conn.Epoch) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), ep.Timeout())
}

// ctxErr is ctx's error, and its cause too when one was given.
func ctxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}
