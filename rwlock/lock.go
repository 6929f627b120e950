package rwlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/petermattis/goid"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/report"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Lock is one side of an RWLock: a lock.Locker, owned and reentrant per
// goroutine and per RWLock handle. Safe for concurrent use.
type Lock struct {
	lockLink // the session, for multilock

	rw    *RWLock
	q     *queue.Queue // rw.rq or rw.wq
	write bool
}

// lockLink is embedded unexported: it adds nothing to the lock's API.
type lockLink = connlink.Link[*conn.Session]

// Path is the lock path shared by both sides.
func (k *Lock) Path() string { return k.rw.path }

// name says which side of which lock k is, for errors.
func (k *Lock) name() string {
	if k.write {
		return "write lock " + k.rw.path
	}
	return "read lock " + k.rw.path
}

// Acquire blocks until the calling goroutine holds this side or ctx ends.
// The holder gets its lease back at once (conn.ErrLeaseLost if lost).
// Upgrade is ErrUpgrade; a downgrade is granted at once.
func (k *Lock) Acquire(ctx context.Context) (*conn.Lease, error) {
	l, _, err := k.acquire(ctx, true)
	return l, err
}

// TryAcquire makes one attempt and does not wait: (nil, false, nil) when
// the lock cannot be granted at once. Otherwise as Acquire.
func (k *Lock) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	return k.acquire(ctx, false)
}

func (k *Lock) acquire(ctx context.Context, wait bool) (*conn.Lease, bool, error) {
	if _, err := locknode.Label(ctx); err != nil { // before re-entry and downgrade
		return nil, false, k.wrap("acquire", err)
	}
	rw := k.rw
	gid := goid.Get()

	rw.mu.Lock()
	o := rw.owners[gid]
	var own, wr *hold // own: this side's hold; wr: our write hold
	if o != nil {
		own, wr = *o.side(k.write), o.w
	}
	switch {
	case own != nil:
		defer rw.mu.Unlock()
		if err := own.lease.Err(); err != nil {
			return nil, false, k.wrap("acquire", fmt.Errorf("re-entering: %w", err))
		}
		own.count++
		return own.lease, true, nil
	case k.write && o != nil && (o.r != nil || o.kept != nil):
		rw.mu.Unlock()
		return nil, false, k.wrap("acquire", ErrUpgrade)
	}
	rw.mu.Unlock()

	var l *conn.Lease
	var err error
	if wr != nil { // read lock under our own write lock
		l, err = rw.downgrade(ctx, wr)
	} else {
		l, err = rw.take(ctx, k.q, wait)
	}
	if err != nil || l == nil {
		return nil, false, k.wrap("acquire", err)
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if o = rw.owners[gid]; o == nil {
		o = &owner{}
		rw.owners[gid] = o
	}
	*o.side(k.write) = &hold{lease: l, count: 1}
	return l, true, nil
}

// wrap says the operation and the side before err (nil stays nil).
func (k *Lock) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("rwlock: %s %s: %w", op, k.name(), err)
}

// take acquires (wait) or tries a node of q, reporting its wait.
func (rw *RWLock) take(ctx context.Context, q *queue.Queue, wait bool) (*conn.Lease, error) {
	done := report.Meter(q.Session(), "rwlock", rw.path)
	g, err := q.AcquireGrant(ctx, wait)
	done(g.Lease != nil, err)
	return g.Lease, err
}

// Release undoes one Acquire of this side by the calling goroutine; the
// last one deletes the side's node. lock.ErrNotOwner or lock.ErrNotHeld
// when the goroutine does not hold this side; lock.ErrReleasePending when
// the delete is unconfirmed (it counts as released); any other error
// leaves it held with a count of one.
func (k *Lock) Release(ctx context.Context) error {
	rw := k.rw
	gid := goid.Get()
	rw.mu.Lock()
	o := rw.owners[gid]
	var h *hold
	if o != nil {
		h = *o.side(k.write)
	}
	switch {
	case h == nil && rw.heldBy(k.write):
		rw.mu.Unlock()
		return k.wrap("release", lock.ErrNotOwner)
	case h == nil:
		rw.mu.Unlock()
		return k.wrap("release", lock.ErrNotHeld)
	case h.count > 1:
		h.count--
		rw.mu.Unlock()
		return nil
	}
	rw.mu.Unlock()

	// Only this goroutine changes o: no lock to read it while deleting.
	if k.write {
		return k.wrap("release", rw.releaseWrite(ctx, gid, o))
	}
	return k.wrap("release", rw.releaseRead(ctx, gid, o))
}

// releaseWrite ends goroutine gid's write hold; after a downgrade, the
// write node may be kept until the read release.
func (rw *RWLock) releaseWrite(ctx context.Context, gid int64, o *owner) error {
	l := o.w.lease
	if o.r != nil {
		switch rw.afterDowngrade(ctx, l, o.r.lease) {
		case keepWrite:
			connlink.Of(l).Released()
			// Shown as kept (locknode.RWStatuses) by its ACL version: a data
			// change would be a release. A failure leaves it shown holding.
			if _, err := connlink.Of(l.Epoch()).SetACL(ctx, l.Path(), rw.wq.NodeACL(), -1); err != nil {
				connlink.Of(rw.wq.Session()).Logger().Debug("downgrade: cannot mark the kept write node", zap.String("node", l.Path()), zap.Error(err))
			}
			rw.mu.Lock()
			o.w, o.kept = nil, l
			rw.mu.Unlock()
			connlink.Of(rw.wq.Session()).Logger().Debug("write lock released; its node kept until the read lock is released (a writer is queued behind it)")
			return nil
		case readAlone:
			connlink.Of(o.r.lease).Unguard()
		case writeGone:
			// The read grant stood on the write node: it stays on it, lost.
			connlink.Of(o.r.lease).Gone()
		}
	}
	err := rw.wq.Release(ctx, l)
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		return err
	}
	rw.drop(gid, o, &o.w)
	return err // nil, or release pending
}

// releaseRead deletes our read node, then any write node kept for it.
func (rw *RWLock) releaseRead(ctx context.Context, gid int64, o *owner) error {
	err := rw.rq.Release(ctx, o.r.lease)
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		return err
	}
	if o.kept != nil {
		kerr := rw.wq.Release(ctx, o.kept)
		if kerr != nil && !errors.Is(kerr, lock.ErrReleasePending) {
			// Still held (count 1): Release again deletes what is left.
			return fmt.Errorf("write node kept since a downgrade: %w", kerr)
		}
		err = errors.Join(err, kerr)
	}
	rw.drop(gid, o, &o.r)
	return err // nil, or release pending
}

// drop clears side h of goroutine gid's owner o (kept goes with the read
// side), and o once it holds nothing.
func (rw *RWLock) drop(gid int64, o *owner, h **hold) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	*h = nil
	if o.r == nil {
		o.kept = nil
	}
	if o.w == nil && o.r == nil {
		delete(rw.owners, gid)
	}
}

// heldBy reports whether any goroutine holds that side. Called with mu.
func (rw *RWLock) heldBy(write bool) bool {
	for _, o := range rw.owners {
		if *o.side(write) != nil {
			return true
		}
	}
	return false
}

// IsOwnedByCurrentGoroutine reports whether the calling goroutine holds
// this side through this handle.
func (k *Lock) IsOwnedByCurrentGoroutine() bool {
	gid := goid.Get()
	k.rw.mu.Lock()
	defer k.rw.mu.Unlock()
	o := k.rw.owners[gid]
	return o != nil && *o.side(k.write) != nil
}

// downgraded grants a read acquire under our own write lock at once.
var downgraded = queue.Predicate{Decide: func([]locknode.Contender, int) (bool, string) { return true, "" }}

// downgrade queues a read node under write hold w, granted standing on the
// write node if that node still exists once the read node does.
func (rw *RWLock) downgrade(ctx context.Context, w *hold) (*conn.Lease, error) {
	wl := w.lease
	if err := wl.Err(); err != nil {
		return nil, fmt.Errorf("downgrade: the write lock: %w", err)
	}
	l, err := rw.take(ctx, rw.dq, true)
	if err != nil {
		return nil, fmt.Errorf("downgrade: %w", err)
	}
	st, err := standsOn(ctx, l, wl)
	if err != nil {
		rctx, cancel := bg.CleanupContext(ctx, l.Epoch())
		_ = rw.dq.Release(rctx, l)
		cancel()
		return nil, fmt.Errorf("downgrade: %w", err)
	}
	rw.mu.Lock()
	w.passes++
	pass := w.passes
	rw.mu.Unlock()
	connlink.Of(l).Guard(wl.Path(), st.Czxid, pass)
	return l, nil
}

// standsOn returns the stat of wl's write node, read once l's node exists
// (conn.ErrLeaseLost if wl is lost or its node gone).
func standsOn(ctx context.Context, l, wl *conn.Lease) (*zk.Stat, error) {
	if l.Epoch() != wl.Epoch() {
		return nil, fmt.Errorf("%w: the write lock's session ended", conn.ErrLeaseLost)
	}
	if err := wl.Err(); err != nil {
		return nil, fmt.Errorf("the write lock: %w", err)
	}
	ok, st, err := connlink.Of(l.Epoch()).Exists(ctx, wl.Path())
	switch {
	case err != nil:
		return nil, fmt.Errorf("checking the write node: %w", err)
	case !ok:
		return nil, fmt.Errorf("%w: the write node %s was deleted", conn.ErrLeaseLost, wl.Path())
	}
	return st, nil
}

// afterRelease is what becomes of a downgrade's write node at its release.
type afterRelease int

const (
	readAlone afterRelease = iota // no writer between: the read grant moves to its own node, the write node goes
	keepWrite                     // a writer between (or no listing): the write node stays until the read release
	writeGone                     // deleted by someone else: the read grant, which stood on it, is lost
)

// afterDowngrade decides from one listing; w is kept if it fails.
func (rw *RWLock) afterDowngrade(ctx context.Context, w, r *conn.Lease) afterRelease {
	names, _, err := connlink.Of(w.Epoch()).Children(ctx, rw.path)
	if err != nil {
		connlink.Of(rw.wq.Session()).Logger().Warn("downgrade: cannot list the queue; keeping the write node until the read lock is released",
			zap.String("lock", rw.path), zap.Error(err))
		return keepWrite
	}
	return between(locknode.Parse(locknode.HostKindSchema{}, names), zkpath.Base(w.Path()), zkpath.Base(r.Path()))
}

// between decides for write node w and read node r from the queue cs.
func between(cs []locknode.Contender, w, r string) afterRelease {
	after := false
	for _, c := range cs {
		switch {
		case c.Name == w:
			after = true
		case !after:
		case c.Name == r:
			return readAlone
		case c.Kind == "W":
			return keepWrite
		}
	}
	if !after {
		return writeGone
	}
	return readAlone
}
