package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/metrics"
)

// ErrLeaseLost: the lease ended (its epoch ended, its node was deleted by
// someone else, or it was released): stop working under the lock. A
// guarded write that fails with it may still have been applied when the
// error also matches ErrConnectionLoss (see Lease.GuardedWrite).
var ErrLeaseLost = errors.New("conn: lease lost")

// revokeMessage is what Curator's Revoker.attemptRevoke writes into a lock
// node to ask its holder to release (LockInternals.REVOKE_MESSAGE).
const revokeMessage = "__REVOKE__"

// Lease is a held lock node: what every recipe hands out on a grant. It
// holds only as long as its ZooKeeper session: the holder learns of a loss
// from Lost, fences with Fence and writes with GuardedWrite. Safe for
// concurrent use.
type Lease struct {
	leaseLink // what the recipes reach (link.go)

	ep   *Epoch
	path string // our node, without namespace

	lost     chan struct{} // closed once by closeLost; never sent on
	lostOnce sync.Once

	revoked     chan struct{} // closed once when the node's data is revokeMessage; never sent on
	revokedOnce sync.Once

	// sig is the epoch's lostSignal when the lease was made (nil for a
	// local view, which follows its parent). Nothing waits on it until
	// someone waits on Lost or Revoked (lostChan); until then Err and the
	// other checks look at it as they run (poll).
	sig       <-chan struct{}
	sigWaiter sync.Once // starts watchEpoch

	// parent is the lease of the node this lease is a local grant on (see
	// localView), nil for the node's own lease; pass is the grant's number
	// on that node (Fence). Both are set at creation and never change.
	parent *Lease
	pass   int64

	// granted is when the grant was made; recipe and lock name the
	// recipe and its lock path (connlink.Lease.Label, before the lease is
	// handed out; lock "" stands for the node's parent): what the hold and
	// loss reported to the Lock hook carry.
	granted time.Time
	recipe  string
	lock    string
	// shared: local grants are made on this node (localView); they, not
	// the node's lease, report holds and losses.
	shared atomic.Bool
	// releasing: the recipe is deleting the node (connlink.Lease.Releasing);
	// its deletion seen meanwhile is the release, not a loss, for the Lock hook.
	releasing atomic.Bool
	// unreported: the lease reports nothing to the Lock hook
	// (connlink.Lease.Unreported, until Label).
	unreported atomic.Bool

	// writes is held for reading by a local grant's guarded write from
	// its check of Lost until its answer, and for writing by the recipe
	// releasing the grant (holdWrites): a grant's write is never sent
	// after the next local grant exists.
	writes sync.RWMutex

	mu    sync.Mutex // guards the fields below
	czxid int64      // our node's czxid; 0 until known (see own)
	// fence is Fence's Zxid when it is not our node's czxid: the guard's,
	// for a guarded grant (guard.go); 0 otherwise. Set once, at the grant.
	fence  int64
	armed  bool   // the node watch has been started
	reason error  // why lost was closed
	guard  string // the node a guarded grant stands on (guard.go); "" for none
}

// newLease makes a lease for node path, which this epoch's session created
// and holds. Recipes reach it through internal/connlink when they acquire.
// It starts no goroutine: a held lease costs only its memory until someone
// waits on its Lost or Revoked.
//
// czxid is the node's czxid when the recipe knows it (it read the node
// and found it its own), 0 when not: the lease then learns it from its
// first read of the node (see own).
func (e *Epoch) newLease(path string, czxid int64) *Lease {
	l := &Lease{ep: e, path: path, czxid: czxid, lost: make(chan struct{}), revoked: make(chan struct{}), sig: e.lostSignal(), granted: time.Now()}
	linkLease(l)
	return l
}

// own checks that st, the answer of a read of the lease's path, is our
// node, and records its czxid the first time: a node at the path whose
// czxid is not the one we know, or, before we know it, whose ephemeral
// owner is not our session, was created after ours was deleted (the naive
// lock's path is every holder's). Ours is gone then: Lost closes, and own
// returns why. Only a known czxid tells our node from one another handle
// of our own session created at the path: the recipe that reuses paths
// (exclusive) gives it at the grant (newLease).
func (l *Lease) own(st *zk.Stat) error {
	l.mu.Lock()
	ok := l.czxid == st.Czxid || l.czxid == 0 && st.EphemeralOwner == l.ep.SessionID()
	if ok {
		l.czxid = st.Czxid
	}
	l.mu.Unlock()
	if ok {
		return nil
	}
	err := causeErr(metrics.CauseNodeDeleted, fmt.Errorf("%w: node %s was deleted; the node there now (czxid 0x%x, owner 0x%x) is not ours",
		ErrLeaseLost, l.path, st.Czxid, st.EphemeralOwner))
	l.closeLost(err)
	return err
}

// lostChan returns l.lost for a caller that waits on it, first starting
// (once) the goroutine that closes it when the epoch's signal comes.
func (l *Lease) lostChan() <-chan struct{} {
	if l.sig != nil {
		l.sigWaiter.Do(func() { go l.watchEpoch() })
	}
	return l.lost
}

func (l *Lease) watchEpoch() {
	select {
	case <-l.sig:
		l.closeLost(l.epochLost())
	case <-l.lost:
	}
}

// poll closes l.lost if the epoch's signal has come, as watchEpoch would:
// for callers that look at the lease's state without waiting.
func (l *Lease) poll() {
	if l.sig == nil {
		return
	}
	select {
	case <-l.sig:
		l.closeLost(l.epochLost())
	default:
	}
}

func (l *Lease) epochLost() error { return fmt.Errorf("%w: %w", ErrLeaseLost, l.epochReason()) }

func (l *Lease) epochReason() error {
	if err := l.ep.Err(); err != nil {
		return err
	}
	return errSuspendedLost
}

// errSuspendedLost is why a lease is lost at a Suspended under
// WithSuspendedAsLost(): the session may come back, with our node.
var errSuspendedLost = errors.New("connection suspended (error policy: suspended counts as lost)")

// Path is the lock node's path.
func (l *Lease) Path() string { return l.path }

// Epoch is the epoch the lease was taken in.
func (l *Lease) Epoch() *Epoch { return l.ep }

// Lost returns a channel closed when the lease must be taken as lost: its
// epoch ended (or, with WithSuspendedAsLost, the connection was suspended),
// someone else deleted its node, or it was released. A change of the node's
// data is no loss (see Revoked). The first call of Lost or Revoked sets a
// watch on the node (one request); until then a foreign delete is noticed
// only by Fence and GuardedWrite, and the lease costs no goroutine.
func (l *Lease) Lost() <-chan struct{} {
	l.arm()
	return l.lostChan()
}

// Revoked returns a channel closed when someone asked the holder to
// release (lock.Revoke, or Curator's Revoker, wrote "__REVOKE__" into the
// node). Only a revocable lock's node can be asked (WithRevocable); a
// sealed one refuses the write. A request is no loss: the lock stays held
// until the holder releases it. The first call arms the watch as Lost does.
func (l *Lease) Revoked() <-chan struct{} {
	l.arm()
	l.lostChan() // watchNode waits on it
	return l.revoked
}

// arm starts the node watch once, unless the lease is already lost.
func (l *Lease) arm() {
	if l.isLost() {
		return
	}
	if l.parent != nil {
		l.parent.arm()
		return
	}
	l.mu.Lock()
	arm := !l.armed
	l.armed = true
	guard := l.guard
	l.mu.Unlock()
	if arm {
		go l.watchNode(l.path, false)
		if guard != "" {
			go l.watchNode(guard, true)
		}
	}
}

func (l *Lease) isLost() bool {
	l.poll()
	select {
	case <-l.lost:
		return true
	default:
		return false
	}
}

// Err is nil while the lease holds as far as this process knows (a
// deletion by someone else only once the node is watched, see Lost), and
// says why once Lost is closed.
func (l *Lease) Err() error {
	l.poll()
	select {
	case <-l.lost:
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.reason
	default:
		return nil
	}
}

// watchNode follows node path with data watches until the lease is lost:
// our own node (guard false), or the guard of a guarded grant (guard.go)
// until the grant no longer stands on it. A data watch (GetW) is never
// left on a node that is gone: the server answers NoNode and sets
// nothing, unlike an exists watch, which would wait for a creation that
// never comes. A watch set on our node (or our guard) is consumed by its
// deletion (our release, or the session's end).
func (l *Lease) watchNode(path string, guard bool) {
	gone := func(err error) {
		if l.ep.ctx.Err() != nil {
			// The epoch ended first: its end deleted the node (the
			// session's own close deletes its nodes), or takes the
			// place of a deletion we cannot date.
			err = l.epochLost()
		}
		if !guard || l.guardedBy(path) {
			l.closeLost(err)
		}
	}
	for !l.isLost() && (!guard || l.guardedBy(path)) {
		data, st, ch, err := l.ep.getW(l.ep.ctx, path)
		switch {
		case err != nil && l.ep.ctx.Err() != nil:
			return // watchEpoch reports it
		case errors.Is(err, zk.ErrNoNode):
			gone(causeErr(metrics.CauseNodeDeleted, fmt.Errorf("%w: node %s was deleted", ErrLeaseLost, path)))
			return
		case err != nil:
			gone(fmt.Errorf("%w: watching %s: %w", ErrLeaseLost, path, err))
			return
		}
		if !guard && l.own(st) != nil {
			unwatchNow(l.ep, ch) // the watch is on someone else's node
			return
		}
		// A request to the node a grant stands on (its guard) is one to
		// the grant: after a downgrade's write release, rwlock's kept
		// write node has no other holder to ask.
		if string(data) == revokeMessage {
			l.revokedOnce.Do(func() {
				close(l.revoked)
				l.ep.s.reportLock(metrics.Lock{Event: metrics.LockRevokeRequest, Recipe: l.recipe, Path: l.lockPath()})
			})
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted {
				gone(causeErr(metrics.CauseNodeDeleted, fmt.Errorf("%w: node %s was deleted", ErrLeaseLost, path)))
				return
			}
			// Data changed (a revoke request, or our own release's mark),
			// or the watch was dropped (the epoch is ending): look again.
		case <-l.lost:
			// The watch is consumed when our node is deleted (a release, a
			// deletion by someone else) or goes with the session. Lost
			// at a Suspended, the session and our node may come back:
			// remove the watch (it is not set again on the reconnect). A
			// guard may stay long after the grant that stood on it (the
			// write lock held on after the read lock's release): remove
			// the watch on it too.
			if guard || errors.Is(l.Err(), errSuspendedLost) {
				unwatchNow(l.ep, ch)
			}
			return
		}
	}
}

// unwatchNow removes the watch behind ch from the server without waiting
// for the answer.
func unwatchNow(ep *Epoch, ch <-chan zk.Event) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // send, do not wait
	_ = ep.unwatch(done, ch)
}

// zxid is our lock node's czxid (Fence.Zxid): known from the grant, or
// read from the server on first use (then cached); it fails with
// ErrLeaseLost if the node is already gone, or is not ours (own).
func (l *Lease) zxid(ctx context.Context) (int64, error) {
	if l.parent != nil {
		return l.parent.zxid(ctx)
	}
	l.mu.Lock()
	z := l.czxid
	if l.fence != 0 {
		z = l.fence
	}
	l.mu.Unlock()
	if z != 0 {
		return z, nil
	}
	ok, st, err := l.ep.exists(ctx, l.path)
	if err != nil {
		return 0, err
	}
	if !ok {
		err := causeErr(metrics.CauseNodeDeleted, fmt.Errorf("%w: node %s was deleted", ErrLeaseLost, l.path))
		l.closeLost(err)
		return 0, err
	}
	if err := l.own(st); err != nil {
		return 0, err
	}
	return st.Czxid, nil
}

// GuardedWrite runs ops (*zk.CreateRequest, *zk.DeleteRequest,
// *zk.SetDataRequest, *zk.CheckVersionRequest) in one transaction behind a
// check that the grant's node still exists, so they commit only while the
// lock is held; a released grant is refused first. A failure because the
// lease ended matches ErrLeaseLost; when it also matches ErrConnectionLoss
// the write may still have been applied: reconcile before retrying. A
// refused op is named by its place among ops and matches the server's
// error. Ops may not set the data of the grant's own node
// (ErrInvalidArgument).
func (l *Lease) GuardedWrite(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if l.parent != nil {
		l.writes.RLock()
		defer l.writes.RUnlock()
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	if l.parent != nil {
		return l.parent.GuardedWrite(ctx, ops...)
	}
	for {
		check := l.checkOp()
		for _, op := range ops {
			if sd, ok := op.(*zk.SetDataRequest); ok && (sd.Path == l.path || sd.Path == check.Path) {
				return nil, fmt.Errorf("a guarded write may not set the data of its own lock node %s: %w", sd.Path, ErrInvalidArgument)
			}
		}
		res, err := l.ep.multi(ctx, append([]any{check}, ops...)...)
		var oe *opError
		switch {
		case err == nil:
			return res[1:], nil
		case errors.Is(err, ErrEpochEnded):
			// The lease ended with the epoch. Sent before (err matches
			// ErrConnectionLoss too), the write may still be applied.
			l.poll()
			return nil, fmt.Errorf("%w: %w", ErrLeaseLost, err)
		case errors.Is(err, ErrConnectionLoss):
			if lost := l.Err(); lost != nil {
				// Lost meanwhile (WithSuspendedAsLost): say both.
				return nil, fmt.Errorf("%w: %w", lost, err)
			}
			return nil, err // fate unknown; the lease may still hold
		case errors.As(err, &oe) && oe.index == 0 && check.Path != l.checked():
			// A guarded grant was handed to its own node while we wrote,
			// and its guard deleted: nothing was written; check that node.
			continue
		case oe != nil && oe.index == 0:
			// Our check failed: the node is gone (its version is not checked).
			lost := causeErr(metrics.CauseNodeDeleted, fmt.Errorf("%w: guarded write refused: node %s is gone", ErrLeaseLost, check.Path))
			l.closeLost(lost)
			return nil, lost
		case oe != nil:
			// One of the caller's ops failed: name it by its place among them.
			c := *oe
			c.index--
			c.call = "guarded write"
			return nil, &c
		}
		return nil, err
	}
}

// checkOp is the check GuardedWrite puts first (connlink.Lease.CheckOp):
// that the node the grant stands on exists, whatever its data version. A
// new request each call.
func (l *Lease) checkOp() *zk.CheckVersionRequest {
	return &zk.CheckVersionRequest{Path: l.checked(), Version: -1}
}

// holdWrites waits until no guarded write through l is in flight and
// keeps new ones from starting until the returned function is called: a
// recipe holds it while it releases a local grant, so that the grant's
// writes are answered before the next grant exists and refused after.
func (l *Lease) holdWrites() (done func()) {
	l.writes.Lock()
	return l.writes.Unlock
}

// revokeSeen reports whether a revoke request has been seen on the node
// (Revoked is closed), without starting the node watch.
func (l *Lease) revokeSeen() bool {
	if l.parent != nil {
		return l.parent.revokeSeen()
	}
	select {
	case <-l.revoked:
		return true
	default:
		return false
	}
}

// released marks the lease as no longer held; recipes call it (through
// internal/connlink) when they delete the node. Lost is closed (Err says
// released). A lease found lost first ends as lost, for the Lock hook: its epoch
// ended before the release began (see setReleasing), or, for a local
// grant, its node's lease was lost.
func (l *Lease) released() {
	if !l.isReleasing() {
		l.poll()
	}
	if p := l.parent; p != nil && p.isLost() {
		if err := p.Err(); lostCause(err) != causeReleased {
			l.closeLost(err)
		}
	}
	l.closeLost(causeErr(causeReleased, fmt.Errorf("%w: released", ErrLeaseLost)))
}

// setReleasing records that the recipe begins (on) or gave up (!on)
// deleting the node (connlink.Lease.Releasing). A lease whose epoch has
// already ended is lost, not released: the node went with the session
// before the holder gave it up.
func (l *Lease) setReleasing(on bool) {
	if on {
		l.poll()
	}
	l.releasing.Store(on)
}

// gone ends the lease as lost: its recipe found the node it stands on
// (checked) deleted, or not ours, before deleting it (connlink.Lease.Gone).
func (l *Lease) gone() {
	l.releasing.Store(false)
	l.closeLost(causeErr(metrics.CauseNodeDeleted, fmt.Errorf("%w: node %s was deleted", ErrLeaseLost, l.checked())))
}

func (l *Lease) closeLost(reason error) {
	l.lostOnce.Do(func() {
		l.mu.Lock()
		l.reason = reason
		l.mu.Unlock()
		// Decided before Lost closes: a Release called on seeing Lost
		// closed must not turn the loss into a hold (isReleasing).
		report := l.report(reason)
		close(l.lost)
		report()
	})
}

// isReleasing reports whether the recipe is deleting the lease's node:
// for a local grant, its node's lease.
func (l *Lease) isReleasing() bool {
	return l.releasing.Load() || l.parent != nil && l.parent.releasing.Load()
}

// report decides how the lease ended, for the session's Lock hook: a hold
// for a release, a loss otherwise; the returned func reports it.
func (l *Lease) report(reason error) func() {
	s := l.ep.s
	if s.cfg.hooks.Lock == nil || l.shared.Load() || l.unreported.Load() {
		return func() {}
	}
	ev := metrics.Lock{Event: metrics.LockLost, Recipe: l.recipe, Path: l.lockPath(), Cause: lostCause(reason)}
	if ev.Cause == causeReleased || ev.Cause == metrics.CauseNodeDeleted && l.isReleasing() {
		ev = metrics.Lock{Event: metrics.LockHold, Recipe: l.recipe, Path: ev.Path, Duration: time.Since(l.granted)}
	}
	return func() { s.reportLock(ev) }
}
