package conn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// ErrLeaseLost: the lease ended (its epoch ended, its node was deleted by
// someone else, or it was released): stop working under the lock.
var ErrLeaseLost = errors.New("conn: lease lost")

// revokeMessage asks a holder to release (Curator's REVOKE_MESSAGE).
const revokeMessage = "__REVOKE__"

// Lease is a held lock node, handed out by every recipe on a grant; it
// holds only as long as its ZooKeeper session. Safe for concurrent use.
type Lease struct {
	leaseLink // what the recipes reach (link.go)

	ep   *Epoch
	path string // our node, without namespace

	lost        chan struct{} // closed once by closeLost
	lostOnce    sync.Once
	revoked     chan struct{} // closed once the node's data is revokeMessage
	revokedOnce sync.Once

	sig       <-chan struct{} // the epoch's lostSignal (nil for a local view): polled until waited on (lostChan)
	sigWaiter sync.Once

	parent *Lease // the node's lease, for a local grant (localView)
	pass   int64  // the grant's number on the node (Fence)

	// The Lock hook's labels; lock "" is the node's parent.
	granted    time.Time
	recipe     string
	lock       string
	shared     atomic.Bool // local grants on this node report holds and losses instead
	releasing  atomic.Bool // the recipe is deleting the node: its deletion is no loss
	unreported atomic.Bool // report nothing to the Lock hook (until Label)

	writes sync.RWMutex // read-held by a local grant's guarded write, write-held by HoldWrites

	mu     sync.Mutex // guards the fields below
	czxid  int64      // our node's czxid; 0 until known (see own)
	fence  int64      // a guarded grant's Fence Zxid (the guard's czxid), else 0
	armed  bool       // the node watch has been started
	reason error      // why lost was closed
	guard  string     // the node a guarded grant stands on; "" for none
}

// NewLease makes a lease for node path (czxid 0: unknown, see own). No
// goroutine runs until Lost or Revoked is called.
func (v *epochView) NewLease(path string, czxid int64) *Lease {
	e := (*Epoch)(v)
	l := &Lease{ep: e, path: path, czxid: czxid, lost: make(chan struct{}), revoked: make(chan struct{}), sig: e.lostSignal(), granted: time.Now()}
	l.leaseLink = connlink.NewLink[connlink.Lease[*Lease]]((*leaseView)(l))
	return l
}

// own checks that st, read at our path, is our node, else closes Lost. Only
// a known czxid (recorded here) tells ours from our session's re-creation.
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

// lostChan returns l.lost for a waiter, first starting (once) to wait on sig.
func (l *Lease) lostChan() <-chan struct{} {
	if l.sig != nil {
		l.sigWaiter.Do(func() {
			go func() {
				select {
				case <-l.sig:
					l.closeLost(l.epochLost())
				case <-l.lost:
				}
			}()
		})
	}
	return l.lost
}

// poll closes l.lost if the epoch's signal has come, for non-waiting callers.
func (l *Lease) poll() {
	if l.sig != nil && closed(l.sig) {
		l.closeLost(l.epochLost())
	}
}

func (l *Lease) epochLost() error {
	return fmt.Errorf("%w: %w", ErrLeaseLost, cmp.Or(l.ep.Err(), errSuspendedLost))
}

// closed reports whether ch, never sent on, is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// errNodeDeleted is the loss of a lease whose node (or guard) was deleted.
func errNodeDeleted(path string) error {
	return causeErr(metrics.CauseNodeDeleted, fmt.Errorf("%w: node %s was deleted", ErrLeaseLost, path))
}

// errSuspendedLost: lost at a Suspended (WithSuspendedAsLost).
var errSuspendedLost = errors.New("connection suspended (error policy: suspended counts as lost)")

// Path is the lock node's path.
func (l *Lease) Path() string { return l.path }

// Epoch is the epoch the lease was taken in.
func (l *Lease) Epoch() *Epoch { return l.ep }

// Lost is closed when the lease must be taken as lost: its epoch ended (or,
// with WithSuspendedAsLost, was suspended), its node was deleted, or it was
// released. Before Lost or Revoked, only Fence and GuardedWrite see a delete.
func (l *Lease) Lost() <-chan struct{} {
	l.arm()
	return l.lostChan()
}

// Revoked is closed when someone asked the holder to release (lock.Revoke,
// or Curator's Revoker): no loss, the lock stays held until released.
func (l *Lease) Revoked() <-chan struct{} {
	l.arm()
	l.lostChan() // watchNode waits on it
	return l.revoked
}

// arm starts the node watch once, unless the lease is already lost.
func (l *Lease) arm() {
	if l.Err() != nil {
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

// Err is nil while the lease holds as far as this process knows, else why not.
func (l *Lease) Err() error {
	l.poll()
	if !closed(l.lost) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}

// watchNode follows path with data watches (none is left on a missing
// node) until the lease is lost: our node, or the guard while it is one.
func (l *Lease) watchNode(path string, guard bool) {
	gone := func(err error) {
		if l.ep.ctx.Err() != nil {
			// The epoch ended first: report that, not the deletion.
			err = l.epochLost()
		}
		if !guard || l.guardedBy(path) {
			l.closeLost(err)
		}
	}
	for l.Err() == nil && (!guard || l.guardedBy(path)) {
		data, st, ch, err := l.ep.view().GetW(l.ep.ctx, path)
		switch {
		case err != nil && l.ep.ctx.Err() != nil:
			return // lostChan reports it
		case errors.Is(err, zk.ErrNoNode):
			gone(errNodeDeleted(path))
			return
		case err != nil:
			gone(fmt.Errorf("%w: watching %s: %w", ErrLeaseLost, path, err))
			return
		}
		if !guard && l.own(st) != nil {
			unwatchNow(l.ep, ch) // the watch is on someone else's node
			return
		}
		// A revoke request on the guard is one to the grant.
		if string(data) == revokeMessage {
			l.revokedOnce.Do(func() {
				close(l.revoked)
				l.ep.s.reportLock(metrics.Lock{Event: metrics.LockRevokeRequest, Recipe: l.recipe, Path: l.lockPath()})
			})
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted {
				gone(errNodeDeleted(path))
				return
			}
			// Data changed or the watch was dropped: look again.
		case <-l.lost:
			// A Suspended or a guard's handover leaves the watch set.
			if guard || errors.Is(l.Err(), errSuspendedLost) {
				unwatchNow(l.ep, ch)
			}
			return
		}
	}
}

// unwatchNow removes the watch behind ch without waiting for the answer.
func unwatchNow(ep *Epoch, ch <-chan zk.Event) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // send, do not wait
	_ = ep.view().Unwatch(done, ch)
}

// zxid is Fence's Zxid: known at the grant or read once. With check, the
// node the grant stands on is read anyway, and found gone the lease is lost.
func (l *Lease) zxid(ctx context.Context, check bool) (int64, error) {
	if err := l.Err(); err != nil {
		return 0, err
	}
	if l.parent != nil {
		return l.parent.zxid(ctx, check)
	}
	l.mu.Lock()
	z, guard := cmp.Or(l.fence, l.czxid), l.guard
	l.mu.Unlock()
	if z != 0 && !check {
		return z, nil
	}
	p := cmp.Or(guard, l.path)
	ok, st, err := l.ep.view().Exists(ctx, p)
	switch {
	case err != nil && l.ep.Err() != nil:
		return 0, cmp.Or(l.Err(), l.epochLost()) // the epoch ended during the read: the lease with it
	case err != nil:
		return 0, err
	case !ok || guard != "" && st.Czxid != z:
		err := errNodeDeleted(p)
		l.closeLost(err)
		return 0, err
	case guard != "":
		return z, nil
	}
	if err := l.own(st); err != nil {
		return 0, err
	}
	return cmp.Or(z, st.Czxid), nil // z: a downgrade's token stays its write node's
}

// GuardedWrite runs ops (*zk.CreateRequest, *zk.DeleteRequest,
// *zk.SetDataRequest, *zk.CheckVersionRequest) in one transaction that
// commits only while the grant's node exists. A lost lease fails with
// ErrLeaseLost (maybe applied if it also matches ErrConnectionLoss); a
// refused op's error names its index. No op may set a lock node (ErrInvalidArgument).
func (l *Lease) GuardedWrite(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if l.parent != nil {
		return l.viewWrite(ctx, ops)
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	for {
		check := l.checkOp()
		for _, op := range ops {
			if sd, ok := op.(*zk.SetDataRequest); ok && (sd.Path == l.path || sd.Path == check.Path || locknode.Recipe(zkpath.Base(sd.Path))) {
				return nil, fmt.Errorf("a guarded write may not set the data of a lock node %s: %w", sd.Path, ErrInvalidArgument)
			}
		}
		res, err := l.ep.view().Multi(ctx, append([]any{check}, ops...)...)
		var oe *opError
		switch {
		case err == nil:
			return res[1:], nil
		case errors.Is(err, ErrEpochEnded):
			// Ended with the epoch; if sent (ErrConnectionLoss too), it may apply.
			l.poll()
			return nil, fmt.Errorf("%w: %w", ErrLeaseLost, err)
		case errors.Is(err, ErrConnectionLoss):
			if lost := l.Err(); lost != nil {
				// Lost meanwhile (WithSuspendedAsLost): say both.
				return nil, fmt.Errorf("%w: %w", lost, err)
			}
			return nil, err // fate unknown; the lease may still hold
		case errors.As(err, &oe) && oe.index == 0 && check.Path != l.checked():
			// The grant moved to its own node and its guard is gone: retry.
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

// viewWrite is GuardedWrite through a local grant: its request holds the
// grant's release off until answered (or the epoch ends), even past ctx,
// so that no write of this grant is applied after the next grant exists.
func (l *Lease) viewWrite(ctx context.Context, ops []any) ([]zk.MultiResponse, error) {
	if err := l.Err(); err != nil {
		return nil, err // not behind a release waiting for writes
	}
	if !l.writes.TryRLock() { // a release waits for other writes: wait within ctx
		got := make(chan struct{})
		go func() { l.writes.RLock(); close(got) }()
		select {
		case <-got:
		case <-ctx.Done():
			go func() { <-got; l.writes.RUnlock() }()
			return nil, fmt.Errorf("conn: guarded write: %w", ctx.Err())
		}
	}
	if err := l.Err(); err != nil {
		l.writes.RUnlock()
		return nil, err
	}
	done := make(chan result[[]zk.MultiResponse], 1)
	go func() {
		defer l.writes.RUnlock()
		res, err := l.parent.GuardedWrite(context.WithoutCancel(ctx), ops...)
		done <- result[[]zk.MultiResponse]{v: res, err: err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("conn: guarded write: %w", ctx.Err())
	}
}

// checkOp is GuardedWrite's first op: the grant's node exists, any version.
func (l *Lease) checkOp() *zk.CheckVersionRequest {
	return &zk.CheckVersionRequest{Path: l.checked(), Version: -1}
}

// released marks the lease released; one lost first stays lost.
func (l *Lease) released() {
	if !l.isReleasing() {
		l.poll()
	}
	if p := l.parent; p != nil {
		if err := p.Err(); err != nil && lostCause(err) != causeReleased {
			l.closeLost(err)
		}
	}
	l.closeLost(causeErr(causeReleased, fmt.Errorf("%w: released", ErrLeaseLost)))
}

// setReleasing: the recipe begins (on) or gave up deleting the node.
func (l *Lease) setReleasing(on bool) {
	if on {
		l.poll()
	}
	l.releasing.Store(on)
}

// gone ends the lease as lost: its recipe found its node deleted or not ours.
func (l *Lease) gone() {
	l.releasing.Store(false)
	l.closeLost(errNodeDeleted(l.checked()))
}

func (l *Lease) closeLost(reason error) {
	l.lostOnce.Do(func() {
		l.mu.Lock()
		l.reason = reason
		l.mu.Unlock()
		// Decided before Lost closes: a Release on seeing it is no hold.
		report := l.report(reason)
		close(l.lost)
		report()
	})
}

// isReleasing: the recipe is deleting the node (a local grant's: its parent's).
func (l *Lease) isReleasing() bool {
	return l.releasing.Load() || l.parent != nil && l.parent.releasing.Load()
}

// report decides how the lease ended for the Lock hook: a hold or a loss.
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

// Fence is a grant's fencing token, growing strictly with every grant of a
// lock (in-process handoffs included): its node's czxid, then the grant's
// number on that node. A resource refuses any below the greatest seen.
type Fence struct {
	Zxid int64
	Pass int64
}

// Compare returns -1 if f was granted before g, 0 if the same, +1 if after.
func (f Fence) Compare(g Fence) int {
	if c := cmp.Compare(f.Zxid, g.Zxid); c != 0 {
		return c
	}
	return cmp.Compare(f.Pass, g.Pass)
}

// String is "zxid.pass", in hexadecimal as ZooKeeper prints zxids.
func (f Fence) String() string { return fmt.Sprintf("0x%x.%d", f.Zxid, f.Pass) }

// Fence returns the grant's fencing token, or ErrLeaseLost; it reads the
// lock node, so it sees a delete before Lost does.
func (l *Lease) Fence(ctx context.Context) (Fence, error) {
	z, err := l.zxid(ctx, true)
	if err != nil {
		return Fence{}, err
	}
	return Fence{Zxid: z, Pass: l.pass}, nil
}

// localView is local grant number pass on l's node, lost when released or l is.
func (l *Lease) localView(pass int64) *Lease {
	l.shared.Store(true)
	v := &Lease{ep: l.ep, path: l.path, parent: l, pass: pass, lost: make(chan struct{}), revoked: make(chan struct{}),
		granted: time.Now(), recipe: l.recipe, lock: l.lock}
	v.leaseLink = connlink.NewLink[connlink.Lease[*Lease]]((*leaseView)(v))
	go v.watchParent()
	return v
}

// watchParent closes the view's Lost when its node's lease is lost, and its
// Revoked on a revoke request to the node while the view holds, not after.
func (l *Lease) watchParent() {
	revoked := l.parent.revoked
	for {
		select {
		case <-l.parent.lostChan():
			l.closeLost(l.parent.Err())
			return
		case <-l.lost:
			return
		case <-revoked:
			revoked = nil
			if !closed(l.lost) {
				close(l.revoked)
			}
		}
	}
}

// Guard makes the lease, not handed out yet, stand on node (czxid zxid)
// until Unguard (docs/design.md, "Downgrading a write lock").
func (v *leaseView) Guard(node string, zxid, pass int64) {
	v.mu.Lock()
	v.guard, v.fence = node, zxid
	v.mu.Unlock()
	v.pass = pass
}

// Unguard moves the grant onto its own node, before the guard's deletion.
func (v *leaseView) Unguard() {
	v.mu.Lock()
	v.guard = ""
	v.mu.Unlock()
}

// checked is the node the grant stands on: its guard, else its own node.
func (l *Lease) checked() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cmp.Or(l.guard, l.path)
}

func (l *Lease) guardedBy(node string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.guard != "" && l.guard == node
}
