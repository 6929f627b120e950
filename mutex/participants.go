package mutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Participant is one contender for the mutex: a node under the lock path
// that counts in its queue, ours or a foreign client's (Curator, kazoo,
// go-zookeeper).
type Participant struct {
	// Node is the node's path.
	Node string
	// Seq is the sequence number the server gave the node.
	Seq int32
	// ID is the contender's unique acquire id (the uuid in the name).
	ID string
	// Host and PID say which process queued it, when its data tells
	// (Curator writes only an address, which becomes Host).
	Host string
	PID  int
	// Known is false when the node's data could not be read as who it is;
	// then only Node, Seq and ID are set.
	Known bool
}

// Participants lists the contenders in queue order: the first holds the
// mutex, the others wait in that order. It is a snapshot; nodes that leave
// while it is taken are left out. An empty list means nobody holds it.
func (m *InterProcessMutex) Participants(ctx context.Context) ([]Participant, error) {
	ps, err := m.q.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("mutex: %w", err)
	}
	out := make([]Participant, len(ps))
	for i, p := range ps {
		out[i] = Participant{Node: conn.JoinPath(m.Path(), p.Name), Seq: p.Seq, ID: p.ID,
			Host: p.Host, PID: p.PID, Known: p.Known}
	}
	return out, nil
}
