package mutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Participants lists the contenders in queue order: the first holds the
// mutex. A snapshot; nodes that leave while it is taken are left out.
func (m *InterProcessMutex) Participants(ctx context.Context) ([]lock.Participant, error) {
	ps, err := m.q.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("mutex: participants of %s: %w", m.Path(), err)
	}
	out := make([]lock.Participant, len(ps))
	for i, p := range ps {
		out[i] = p.Public(m.Path(), i == 0)
	}
	return out, nil
}
