package rwlock

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
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
// through lease w, and grants it at once. The grant must be in w's epoch:
// if the session ended meanwhile, w is lost and so is the right to skip
// the queue, and the read node (granted in a new epoch by the engine) is
// deleted again.
func (rw *RWLock) downgrade(ctx context.Context, w *conn.Lease) (*conn.Lease, error) {
	if err := w.Err(); err != nil {
		return nil, fmt.Errorf("downgrade: the write lock: %w", err)
	}
	l, err := rw.dq.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("downgrade: %w", err)
	}
	if l.Epoch() != w.Epoch() || w.Err() != nil {
		rctx, cancel := queue.CleanupContext(ctx, l.Epoch())
		_ = rw.dq.Release(rctx, l)
		cancel()
		return nil, fmt.Errorf("downgrade: %w: the write lock's session ended", conn.ErrLeaseLost)
	}
	return l, nil
}

// mustKeep decides, when a goroutine that downgraded releases the write
// lock, whether its write node w must stay until its read node r goes: yes
// when a writer is queued between them. That writer watches w (or a node
// between) and would get in as soon as w went, while we still read. The
// part of the queue between w and r can only shrink (every node in it was
// created before r), so one listing settles it. If the listing fails, w is
// kept: always safe, at the cost of holding other readers back until the
// read lock is released.
func (rw *RWLock) mustKeep(ctx context.Context, w, r *conn.Lease) bool {
	names, _, err := w.Epoch().Children(ctx, rw.path)
	if err != nil {
		rw.wq.Session().Logger().Warn("downgrade: cannot list the queue; keeping the write node until the read lock is released",
			zap.String("lock", rw.path), zap.Error(err))
		return true
	}
	return writerBetween(queue.Parse(queue.HostKindSchema{}, names), conn.BaseName(w.Path()), conn.BaseName(r.Path()))
}

// writerBetween reports whether a writer's node sorts strictly between
// nodes w and r among the contenders cs (in queue order). If r is missing
// (deleted by someone else), every writer after w counts; if w is
// missing, no writer can get in through it, so nothing does.
func writerBetween(cs []queue.Contender, w, r string) bool {
	after := false
	for _, c := range cs {
		switch {
		case c.Name == w:
			after = true
		case c.Name == r:
			return false
		case after && c.Kind == "W":
			return true
		}
	}
	return false
}
