package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// ErrLeaseLost: the lease's node is gone (epoch ended, or deleted by someone
// else) or the lease was released, so a guarded write was refused.
var ErrLeaseLost = errors.New("conn: lease lost")

// Lease is a lock node held in one epoch: what every recipe hands out on a
// grant. Holding a lease is a lease on the ZooKeeper session, not a promise:
// the session can end at any time (expiry, partition), and the holder learns
// it from Lost. Use Token as a fencing token and GuardedWrite for writes that
// must only happen while the lock is held.
//
// Safe for concurrent use.
type Lease struct {
	ep   *Epoch
	path string // our node, without namespace

	lost     chan struct{} // closed once by closeLost; never sent on
	lostOnce sync.Once

	mu     sync.Mutex // guards the fields below
	czxid  int64      // 0 until fetched
	armed  bool       // the deletion watch has been set
	reason error      // why lost was closed
}

// NewLease makes a lease for node path, which this epoch's session created
// and holds. Recipes call it when they acquire.
func (e *Epoch) NewLease(path string) *Lease {
	l := &Lease{ep: e, path: path, lost: make(chan struct{})}
	go l.watchEpoch(e.LostSignal())
	return l
}

func (l *Lease) watchEpoch(sig <-chan struct{}) {
	select {
	case <-sig:
		l.closeLost(fmt.Errorf("%w: %w", ErrLeaseLost, l.epochReason()))
	case <-l.lost:
	}
}

func (l *Lease) epochReason() error {
	if err := l.ep.Err(); err != nil {
		return err
	}
	return errors.New("connection suspended (error policy: suspended counts as lost)")
}

// Path is the lock node's path.
func (l *Lease) Path() string { return l.path }

// Epoch is the epoch the lease was taken in.
func (l *Lease) Epoch() *Epoch { return l.ep }

// Lost returns a channel closed when the lease must be taken as lost: the
// epoch ended (or, with WithSuspendedAsLost, the connection was suspended),
// the node was deleted or its data changed by someone else, or the lease
// was released. The first
// call sets a watch on the node (one request, in the background); before
// that, a deletion by someone else is noticed only by Token and
// GuardedWrite. The channel is closed, never sent on.
func (l *Lease) Lost() <-chan struct{} {
	l.mu.Lock()
	arm := !l.armed
	l.armed = true
	l.mu.Unlock()
	if arm {
		go l.watchNode()
	}
	return l.lost
}

// Err is nil while the lease holds, and says why once Lost is closed.
func (l *Lease) Err() error {
	select {
	case <-l.lost:
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.reason
	default:
		return nil
	}
}

func (l *Lease) watchNode() {
	for {
		ok, st, ch, err := l.existsW(l.ep.ctx)
		switch {
		case err != nil && l.ep.ctx.Err() != nil:
			return // watchEpoch reports it
		case err != nil:
			l.closeLost(fmt.Errorf("%w: watching %s: %w", ErrLeaseLost, l.path, err))
			return
		case !ok:
			l.closeLost(fmt.Errorf("%w: node %s was deleted", ErrLeaseLost, l.path))
			return
		case st.Version != 0:
			// Recipes never change a held node; a release marks and
			// deletes it in one transaction, so this is someone else.
			l.closeLost(fmt.Errorf("%w: node %s was changed by someone else", ErrLeaseLost, l.path))
			return
		}
		select {
		case <-ch: // deleted or changed: look again
		case <-l.lost:
			return // the watch fires and is gone when our node is deleted
		}
	}
}

func (l *Lease) existsW(ctx context.Context) (bool, *zk.Stat, <-chan zk.Event, error) {
	ok, st, ch, err := l.ep.ExistsW(ctx, l.path)
	if ok {
		l.mu.Lock()
		l.czxid = st.Czxid
		l.mu.Unlock()
	}
	return ok, st, ch, err
}

// Token is the fencing token: the lock node's czxid, which grows with every
// successive holder of the lock. It is read from the server on first use
// (then cached) and fails with ErrLeaseLost if the node is already gone.
func (l *Lease) Token(ctx context.Context) (int64, error) {
	l.mu.Lock()
	z := l.czxid
	l.mu.Unlock()
	if z != 0 {
		return z, nil
	}
	ok, st, err := l.ep.Exists(ctx, l.path)
	if err != nil {
		return 0, err
	}
	if !ok {
		err := fmt.Errorf("%w: node %s was deleted", ErrLeaseLost, l.path)
		l.closeLost(err)
		return 0, err
	}
	l.mu.Lock()
	l.czxid = st.Czxid
	l.mu.Unlock()
	return st.Czxid, nil
}

// GuardedWrite runs ops (see Epoch.Multi) in one transaction behind a check
// that our lock node still exists unchanged, so they commit only while the
// lock is ours. A refused check returns an error matching ErrLeaseLost (and
// nothing was written); a connection loss returns ErrConnectionLoss (the
// writes may or may not have been applied).
func (l *Lease) GuardedWrite(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	select {
	case <-l.lost:
		return nil, l.Err()
	default:
	}
	all := append([]any{&zk.CheckVersionRequest{Path: l.path, Version: 0}}, ops...)
	res, err := l.ep.Multi(ctx, all...)
	switch {
	case err == nil:
		return res[1:], nil
	case errors.Is(err, ErrConnectionLoss):
		return nil, err // fate unknown
	case errors.Is(err, ErrEpochEnded):
		return nil, fmt.Errorf("%w: %w", ErrLeaseLost, err)
	case errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion):
		// The server names no failing op; tell ours from the caller's.
		ok, st, xerr := l.ep.Exists(ctx, l.path)
		if xerr == nil && (!ok || st.Version != 0) {
			lost := fmt.Errorf("%w: guarded write refused: node %s is gone", ErrLeaseLost, l.path)
			l.closeLost(lost)
			return nil, lost
		}
	}
	return nil, err
}

// Released marks the lease as no longer held; recipes call it when they
// delete the node. Lost is closed (Err says released).
func (l *Lease) Released() {
	l.closeLost(fmt.Errorf("%w: released", ErrLeaseLost))
}

func (l *Lease) closeLost(reason error) {
	l.lostOnce.Do(func() {
		l.mu.Lock()
		l.reason = reason
		l.mu.Unlock()
		close(l.lost)
	})
}
