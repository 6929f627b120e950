package mutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Participant is lock.Participant: one contender for the mutex, a node
// under the lock path that counts in its queue, ours or a foreign client's
// (Curator, kazoo, go-zookeeper). The first one listed holds the mutex.
type Participant = lock.Participant

// Participants lists the contenders in queue order: the first holds the
// mutex, the others wait in that order. It is a snapshot; nodes that leave
// while it is taken are left out. An empty list means nobody holds it.
func (m *InterProcessMutex) Participants(ctx context.Context) ([]Participant, error) {
	ps, err := m.q.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("mutex: participants of %s: %w", m.Path(), err)
	}
	out := make([]Participant, len(ps))
	for i, p := range ps {
		out[i] = Participant{Node: conn.JoinPath(m.Path(), p.Name), Holding: i == 0, Seq: p.Seq, ID: p.ID,
			Host: p.Host, PID: p.PID, Known: p.Known}
	}
	return out, nil
}
