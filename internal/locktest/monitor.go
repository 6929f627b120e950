package locktest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Interval is one hold of the lock by one contender: from the moment
// Acquire returned to the moment Release was called.
type Interval struct {
	Who        int
	Start, End time.Time
}

// Overlaps returns the pairs of intervals that overlap in time, after
// sorting them by start. Under a correct lock there are none: the next
// holder's Acquire can only return after the previous holder's Release was
// called. Pure, for table tests.
func Overlaps(history []Interval) [][2]Interval {
	h := append([]Interval(nil), history...)
	sort.SliceStable(h, func(i, j int) bool { return h[i].Start.Before(h[j].Start) })
	var out [][2]Interval
	var last Interval // the interval that ends latest among those seen
	for i, iv := range h {
		if i > 0 && iv.Start.Before(last.End) {
			out = append(out, [2]Interval{last, iv})
		}
		if i == 0 || iv.End.After(last.End) {
			last = iv
		}
	}
	return out
}

// monitor watches over one lock's critical section from three sides: an
// in-process counter, an ephemeral guard node on the server, and the
// history of hold intervals.
type monitor struct {
	guard string // <lock path>-guard/holder

	inside atomic.Int32

	mu         sync.Mutex // guards the fields below
	history    []Interval
	violations []string
}

// newMonitor makes the guard's parent (a persistent node) for the lock at
// path.
func newMonitor(ctx context.Context, s *conn.Session, path string) (*monitor, error) {
	ep, err := connlink.Of(s).Epoch(ctx)
	if err != nil {
		return nil, err
	}
	parent := path + "-guard"
	if err := connlink.Of(ep).CreateParents(ctx, parent); err != nil {
		return nil, err
	}
	if _, err := connlink.Of(ep).Create(ctx, parent, nil, 0, connlink.Of(s).ACL()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return nil, err
	}
	return &monitor{guard: zkpath.Join(parent, "holder")}, nil
}

func (m *monitor) violate(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.violations = append(m.violations, fmt.Sprintf(format, args...))
}

// enter is called by contender who right after its Acquire returned lease.
// It returns the start of the hold, and an error when the guard could not be
// created for a reason other than a violation (e.g. the lease's epoch
// ended: under faults a lock can be lost before the holder looks).
func (m *monitor) enter(ctx context.Context, who int, lease *conn.Lease) (time.Time, error) {
	start := time.Now()
	if n := m.inside.Add(1); n > 1 {
		m.violate("contender %d entered while %d others were inside (in-process counter)", who, n-1)
	}
	ep := lease.Epoch()
	_, err := connlink.Of(ep).Create(ctx, m.guard, []byte(fmt.Sprint(who)), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		// A create retried after a lost answer finds its own node: ask the
		// server whose it is.
		data, st, gerr := connlink.Of(ep).Get(ctx, m.guard)
		switch {
		case gerr != nil:
			err = gerr
		case st.EphemeralOwner == ep.SessionID():
			err = nil
		default:
			m.violate("contender %d (session 0x%x) holds the lock but the guard node belongs to session 0x%x (contender %s)",
				who, ep.SessionID(), st.EphemeralOwner, data)
			err = nil
		}
	}
	return start, err
}

// exit is called by contender who right before it calls Release. It deletes
// the guard if it is still its own and records the interval.
func (m *monitor) exit(ctx context.Context, who int, lease *conn.Lease, start time.Time) error {
	end := time.Now()
	m.inside.Add(-1)
	m.mu.Lock()
	m.history = append(m.history, Interval{Who: who, Start: start, End: end})
	m.mu.Unlock()
	ep := lease.Epoch()
	for {
		_, st, err := connlink.Of(ep).Get(ctx, m.guard)
		switch {
		case errors.Is(err, zk.ErrNoNode) || ep.Err() != nil:
			return nil // gone with our session
		case err != nil:
			return err
		case st.EphemeralOwner != ep.SessionID():
			return nil // not ours: our epoch ended and someone else is inside
		}
		// One delete, never retried blindly: the guard path is shared, and a
		// retry after a lost answer could remove the next holder's guard.
		_, err = connlink.Of(ep).Multi(ctx, &zk.DeleteRequest{Path: m.guard, Version: st.Version})
		switch {
		case err == nil || errors.Is(err, zk.ErrNoNode) || ep.Err() != nil:
			return nil
		case errors.Is(err, conn.ErrConnectionLoss) && ctx.Err() == nil:
			continue // fate unknown: read the guard again
		}
		return err
	}
}

// report fails t with every violation and overlap seen.
func (m *monitor) report(t interface{ Errorf(string, ...any) }) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.violations {
		t.Errorf("locktest: mutual exclusion violated: %s", v)
	}
	for _, p := range Overlaps(m.history) {
		t.Errorf("locktest: hold intervals overlap: contender %d [%v, %v] and contender %d [%v, %v]",
			p[0].Who, p[0].Start.Format(time.StampMicro), p[0].End.Format(time.StampMicro),
			p[1].Who, p[1].Start.Format(time.StampMicro), p[1].End.Format(time.StampMicro))
	}
}

// holds is the number of intervals recorded.
func (m *monitor) holds() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.history)
}
