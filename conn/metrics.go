package conn

import (
	"cmp"
	"errors"
	"path"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// WithMetrics sets the hooks the session and its recipes report to
// (package metrics; default: none). A nil hook is skipped.
func WithMetrics(h metrics.Hooks) Option {
	return option("conn.WithMetrics", func(c *config) { c.hooks = h })
}

func (s *Session) reportLock(l metrics.Lock) {
	if f := s.cfg.hooks.Lock; f != nil {
		f(l)
	}
}

// causeError is a lease's loss reason that says its cause for the Lock hook.
type causeError struct {
	cause string
	err   error
}

func (e *causeError) Error() string { return e.err.Error() }
func (e *causeError) Unwrap() error { return e.err }

func causeErr(cause string, err error) error { return &causeError{cause: cause, err: err} }

// causeReleased is the cause of a lease's end by release: no loss.
const causeReleased = "released"

// lockPath is the lock path its recipe gave, else the node's parent.
func (l *Lease) lockPath() string { return cmp.Or(l.lock, path.Dir(l.path)) }

// lostCause classifies why a lease ended: a metrics.Cause*, or causeReleased.
func lostCause(reason error) string {
	var ce *causeError
	switch {
	case errors.As(reason, &ce):
		return ce.cause
	case errors.Is(reason, ErrSessionExpired):
		return metrics.CauseExpiry
	case errors.Is(reason, ErrSessionTimeout):
		return metrics.CauseLocalTimer
	case errors.Is(reason, errSuspendedLost):
		return metrics.CauseSuspended
	case errors.Is(reason, ErrClosed):
		return metrics.CauseClosed
	}
	return metrics.CauseOther
}

var opNames = []string{metrics.OpCreate, metrics.OpDelete, metrics.OpGet, metrics.OpGetW, metrics.OpChildren, metrics.OpExists,
	metrics.OpSet, metrics.OpMulti, metrics.OpSync, metrics.OpAuth, metrics.OpGetACL, metrics.OpSetACL}

// counters are the live counts behind Stats; the map is read-only once built.
type counters struct {
	requests    map[string]*atomic.Int64
	watchEvents atomic.Int64
	watchesSet  atomic.Int64
	quorumSyncs atomic.Int64
	// Not in Stats: read by tests and CheckWire.
	setWatchesSent atomic.Int64 // set-watches requests written
	watchesRemoved atomic.Int64 // removeWatches requests written
	splitWrites    atomic.Int64 // go-zookeeper writes that were not one whole frame
	handshakesCut  atomic.Int64 // connections dropped for an unanswered connect request
	serversLeft    atomic.Int64 // connections dropped for a silent server (leaveSilent)
}

func newCounters() *counters {
	c := &counters{requests: make(map[string]*atomic.Int64, len(opNames))}
	for _, op := range opNames {
		c.requests[op] = new(atomic.Int64)
	}
	return c
}

func (c *counters) count(op string) { c.requests[op].Add(1) }

func (c *counters) snapshot() connlink.Stats {
	s := connlink.Stats{
		Requests:    make(map[string]int64, len(c.requests)),
		WatchEvents: c.watchEvents.Load(),
		WatchesSet:  c.watchesSet.Load(),
		QuorumSyncs: c.quorumSyncs.Load(),
	}
	for k, v := range c.requests {
		s.Requests[k] = v.Load()
	}
	return s
}
