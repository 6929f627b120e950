package rwlock

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Participants lists the readers' and writers' nodes in queue order, each
// Holding as the lock grants it. A write node kept after a downgrade holds
// nothing. A snapshot; nodes that leave while it is taken are left out.
func (rw *RWLock) Participants(ctx context.Context) ([]lock.Participant, error) {
	ps, err := rw.wq.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("rwlock: participants of %s: %w", rw.path, err)
	}
	ns := make([]locknode.RWNode, len(ps))
	for i, p := range ps {
		ns[i] = locknode.RWNode{Contender: p.Contender, Session: p.Session, Tag: p.Tag, ACLVersion: p.ACLVersion}
	}
	st := locknode.RWStatuses(ns)
	out := make([]lock.Participant, len(ps))
	for i, p := range ps {
		out[i] = p.Public(rw.path, st[i] == locknode.RWHolds)
	}
	return out, nil
}
