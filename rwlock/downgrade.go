package rwlock

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"go.uber.org/zap"
)

// downgraded is the predicate of a read acquire by a goroutine that holds
// the write lock: granted at once. Nobody else holds the lock while we hold
// the write lock, so sharing it with ourselves is safe; NoneBefore("W")
// would wait for our own write node, or for a writer queued behind it,
// which waits for us: a deadlock.
func downgraded([]queue.Contender, int) (bool, string) { return true, "" }

// downgrade queues a read node for a goroutine that holds the write lock
// (hold w), and grants it at once. The grant stands on the write node:
// nobody else holds the lock while that node exists. So it is made only if
// the write node still exists once the read node does (a node never comes
// back: it then existed all along, and nobody got in meanwhile), and in
// w's epoch: if the session ended, w is lost and so is the right to skip
// the queue. Otherwise the read node is deleted again and the error
// matches conn.ErrLeaseLost.
//
// Until the write lock's release hands it to its own node (releaseWrite),
// the read lease checks the write node (GuardedWrite, CheckOp), is lost
// when that node is deleted by someone else (once watched: Lost), and its
// Fence is the write node's czxid with the downgrade's pass under w: it
// sorts after the write grant and before any grant of a node queued after
// the write node, such as a writer between our two nodes.
func (rw *RWLock) downgrade(ctx context.Context, w *hold) (*conn.Lease, error) {
	wl := w.lease
	if err := wl.Err(); err != nil {
		return nil, fmt.Errorf("downgrade: the write lock: %w", err)
	}
	l, err := rw.dq.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("downgrade: %w", err)
	}
	st, err := standsOn(ctx, l, wl)
	if err != nil {
		rctx, cancel := queue.CleanupContext(ctx, l.Epoch())
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

// standsOn returns the stat of the write node of wl, once the read node
// of l exists: an error if it cannot be read, one matching
// conn.ErrLeaseLost if wl is lost or its node gone.
func standsOn(ctx context.Context, l, wl *conn.Lease) (*zk.Stat, error) {
	if l.Epoch() != wl.Epoch() {
		return nil, fmt.Errorf("%w: the write lock's session ended", conn.ErrLeaseLost)
	}
	if err := wl.Err(); err != nil {
		return nil, fmt.Errorf("the write lock: %w", err)
	}
	ok, st, err := l.Epoch().Exists(ctx, wl.Path())
	switch {
	case err != nil:
		return nil, fmt.Errorf("checking the write node: %w", err)
	case !ok:
		return nil, fmt.Errorf("%w: the write node %s was deleted", conn.ErrLeaseLost, wl.Path())
	}
	return st, nil
}

// afterRelease is what becomes of a downgrade's write node when the write
// lock is released while the read lock is held.
type afterRelease int

const (
	readAlone afterRelease = iota // no writer between: the read grant moves to its own node, the write node goes
	keepWrite                     // a writer between (or no listing): the write node stays until the read release
	writeGone                     // deleted by someone else: the read grant, which stood on it, is lost
)

// afterDowngrade decides, when a goroutine that downgraded releases the
// write lock, what becomes of its write node w, on which its read grant r
// stands. If a writer is queued between w and r, w stays until r goes:
// that writer watches w (or a node between) and would get in as soon as w
// went, while we still read. The part of the queue between w and r can
// only shrink (every node in it was created before r), so one listing
// settles it. If the listing fails, w is kept: always safe, at the cost of
// holding other readers back until the read lock is released.
func (rw *RWLock) afterDowngrade(ctx context.Context, w, r *conn.Lease) afterRelease {
	names, _, err := w.Epoch().Children(ctx, rw.path)
	if err != nil {
		rw.wq.Session().Logger().Warn("downgrade: cannot list the queue; keeping the write node until the read lock is released",
			zap.String("lock", rw.path), zap.Error(err))
		return keepWrite
	}
	return between(queue.Parse(queue.HostKindSchema{}, names), conn.BaseName(w.Path()), conn.BaseName(r.Path()))
}

// between says, from the contenders cs (in queue order), what becomes of
// write node w when the write lock is released while read node r stands on
// it: kept if a writer's node sorts strictly between them, or if r is
// missing (deleted by someone else) and any writer follows w; gone if w
// is missing (a writer may have got in: r's grant is lost, whatever came
// after); else r stands alone.
func between(cs []queue.Contender, w, r string) afterRelease {
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

// markKept marks write node l, kept after the write lock's release, as
// kept, for Participants and the zkrecipes command (queue.RWStatuses): it
// sets the node's ACL again, unchanged, which raises its ACL version. Its
// data is left alone: a data change of a sealed node is what the waiter
// behind takes as its holder's release. A failure only leaves the node
// shown as holding the write lock.
func (rw *RWLock) markKept(ctx context.Context, l *conn.Lease) {
	if _, err := connlink.Of(l.Epoch()).SetACL(ctx, l.Path(), rw.wq.NodeACL(), -1); err != nil {
		rw.wq.Session().Logger().Debug("downgrade: cannot mark the kept write node", zap.String("node", l.Path()), zap.Error(err))
	}
}
