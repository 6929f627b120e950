package rwlock

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

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

// afterRelease is what becomes of a downgrade's write node at the write
// release.
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

// between decides from contenders cs (in queue order) for write node w and
// read node r: kept if a writer sorts between them.
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
