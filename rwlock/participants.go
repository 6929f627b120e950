package rwlock

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Participants lists the readers' and writers' nodes in queue order, each
// Holding as the lock grants it: a reader with no writer's node before it,
// a downgrade's read node (granted at once) while the write node it stands
// on is the first node, a writer whose node is first.
// A writer's node kept after a downgrade's write release (a writer was
// queued between it and the read node) holds nothing: the write lock is
// released, the node only keeps that writer out until the read release.
// It is a snapshot; nodes that leave while it is taken are left out.
func (rw *RWLock) Participants(ctx context.Context) ([]lock.Participant, error) {
	ps, err := rw.wq.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("rwlock: participants of %s: %w", rw.path, err)
	}
	ns := make([]queue.RWNode, len(ps))
	for i, p := range ps {
		ns[i] = queue.RWNode{Contender: p.Contender, Session: p.Session, Tag: p.Tag, ACLVersion: p.ACLVersion}
	}
	st := queue.RWStatuses(ns)
	out := make([]lock.Participant, len(ps))
	for i, p := range ps {
		out[i] = p.Public(rw.path, st[i] == queue.RWHolds)
	}
	return out, nil
}
