package semaphoremutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// holders lists the lease holders, oldest first. With one lease and no
// lease node, the holder may be ours, listed with the internal lock node it
// keeps as its lease (soleLeaseTag). A snapshot.
func (s *Semaphore) holders(ctx context.Context) ([]lock.Participant, error) {
	ps, err := s.leases.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: holders of %s: %w", s.path, err)
	}
	if len(ps) > s.max {
		ps = ps[:s.max] // the rest is the contender checking under the internal lock
	}
	if len(ps) > 0 || s.max > 1 {
		return convert(s.leasesPath, ps, true), nil
	}
	locks, err := s.lock.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: holders of %s: %w", s.path, err)
	}
	if len(locks) == 0 || locks[0].Tag != soleLeaseTag {
		return convert(s.leasesPath, ps, true), nil // none
	}
	return convert(zkpath.Join(s.path, locksDir), locks[:1], true), nil
}

// Participants lists the lease holders, oldest first (Holding), then the
// contenders queued on the internal lock in the order they will be served.
// With one lease, a holder's Node may be its internal lock node. A
// snapshot, not atomic: nodes that leave while it is taken are left out.
func (s *Semaphore) Participants(ctx context.Context) ([]lock.Participant, error) {
	holders, err := s.holders(ctx)
	if err != nil {
		return nil, err
	}
	waiting, err := s.lock.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("semaphoremutex: participants of %s: %w", s.path, err)
	}
	ids := make(map[string]bool, len(holders))
	for _, h := range holders {
		ids[h.ID] = true
	}
	out := holders
	for _, w := range convert(zkpath.Join(s.path, locksDir), waiting, false) {
		if !ids[w.ID] { // our lease node carries our lock node's id
			out = append(out, w)
		}
	}
	return out, nil
}

// Participants lists the holder, if any, then the waiters in the order
// they will be served (see Semaphore.Participants).
func (m *Mutex) Participants(ctx context.Context) ([]lock.Participant, error) {
	return m.sem.Participants(ctx)
}

func convert(dir string, ps []queue.Participant, holding bool) []lock.Participant {
	out := make([]lock.Participant, len(ps))
	for i, p := range ps {
		out[i] = p.Public(dir, holding)
	}
	return out
}
