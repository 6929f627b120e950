package conn

import (
	"errors"
	"fmt"
	"path"
	"time"
)

// Metrics receives what a session and the recipes on it do, for a service
// to export (WithMetrics). The repository's adapters are modules of their
// own, so that the library needs no metrics dependency:
// github.com/zkrecipes/zkrecipes/metrics/prometheus and
// github.com/zkrecipes/zkrecipes/metrics/otel.
//
// The methods are called synchronously, from the goroutine of the event
// (a request, an Acquire, a Release, the session manager): they must be
// quick, must not block and must not call back into the session. They are
// called concurrently. Durations are time.Duration; the adapters export
// them in seconds. Paths are passed as they are (without namespace): an
// adapter bounds the number of label values it makes of them.
//
// Embed NopMetrics in an implementation to stay compatible when methods
// are added.
type Metrics interface {
	// State is every state transition of the session (the Event that
	// Subscribe delivers). A Connected event is a new epoch: a new
	// ZooKeeper session.
	State(Event)
	// Request is one request sent to ZooKeeper: every attempt, retries
	// included (as Stats.Requests counts them), with its latency.
	Request(RequestMetric)
	// Lock is one event of a lock or election: a wait that ended, a hold
	// that ended, a local handoff, a lost lease or a revoke request.
	Lock(LockMetric)
	// Leader is the start (Leading true) or the end (Leading false, with
	// the term's Duration) of a leader term.
	Leader(LeaderMetric)
	// Watches is a change, by delta (+1 or -1), of the number of watches
	// the session has on the servers for its callers (a gauge's value is
	// the sum of the deltas; several sessions may add into one). A watch
	// is a path and a kind (data: GetW and ExistsW; child: ChildrenW),
	// one server watch for all the session's callers waiting on it; it is
	// counted from the moment the first of those calls is made (a call
	// that fails takes it back) until it fires, its last caller stops
	// waiting (its removal is then sent), or its epoch ends. The recipes'
	// waiters and Lost channels watch through these calls.
	Watches(delta int)
}

// NopMetrics is a Metrics that does nothing, to embed.
type NopMetrics struct{}

func (NopMetrics) State(Event)           {}
func (NopMetrics) Request(RequestMetric) {}
func (NopMetrics) Lock(LockMetric)       {}
func (NopMetrics) Leader(LeaderMetric)   {}
func (NopMetrics) Watches(int)           {}

// RequestMetric is one request to ZooKeeper.
type RequestMetric struct {
	// Op is the operation (the Op* names).
	Op string
	// Duration is from the request's send to its answer, or to the moment
	// the caller stopped waiting (its context or the epoch ended).
	Duration time.Duration
	// Err is the request's error, nil on success (zk.ErrNoNode and the
	// like are errors here).
	Err error
}

// LockEvent says what a LockMetric reports.
type LockEvent string

const (
	// LockWait: an Acquire or TryAcquire returned after Duration; Outcome
	// says how. One per call that asks for the lock, local waiters of an
	// in-process handoff included (a leader's campaign is one); a
	// re-entrant call of a goroutine that holds the lock (mutex, rwlock)
	// waits for nothing and is not reported, nor is its hold, nor is a
	// call refused for its label with ErrInvalidArgument (it asks for
	// nothing).
	LockWait LockEvent = "wait"
	// LockHold: a grant was released (by the recipe: Release, Resign, a
	// local handoff) after being held for Duration, from the grant, and was
	// not lost before: its release began in a live epoch and found the node
	// there. A grant ends in one LockHold or one LockLost, never both.
	LockHold LockEvent = "hold"
	// LockHandoff: a grant was passed to a local waiter of the same
	// session without a ZooKeeper round trip (in-process handoff).
	LockHandoff LockEvent = "handoff"
	// LockLost: a held lease was found lost; Cause says why. It is
	// reported once per lease, when the lease learns it: something waits on
	// its Lost channel or checks it (Err, Fence, a guarded write), or, at
	// the latest, its recipe's release finds its epoch ended or its node
	// gone.
	LockLost LockEvent = "lost"
	// LockRevokeRequest: someone asked the holder to release (Lease.Revoked
	// was closed).
	LockRevokeRequest LockEvent = "revoke_request"
)

// Outcomes of a LockWait.
const (
	OutcomeGranted    = "granted"
	OutcomeNotGranted = "not_granted" // TryAcquire found the lock taken
	OutcomeTimeout    = "timeout"     // the context's deadline passed
	OutcomeCancelled  = "cancelled"   // the context was cancelled
	OutcomeError      = "error"       // any other error
)

// Causes of a LockLost.
const (
	CauseExpiry      = "expiry"       // the server expired the session (ErrSessionExpired)
	CauseLocalTimer  = "local_timer"  // the local timer ended the epoch (ErrSessionTimeout)
	CauseNodeDeleted = "node_deleted" // the node was deleted or replaced by another session while the epoch lived
	CauseSuspended   = "suspended"    // the connection was suspended under WithSuspendedAsLost
	CauseClosed      = "closed"       // the session was closed while the lease was held (its own deletion of its nodes included)
	CauseOther       = "other"        // anything else (the node's watch failed)
)

// LockMetric is one event of a lock, a semaphore lease or an election
// candidacy.
type LockMetric struct {
	Event LockEvent
	// Recipe names the recipe: "mutex", "rwlock", "semaphoremutex",
	// "semaphore", "leader", "exclusive". A semaphoremutex's holds and
	// losses are its semaphore lease's: "semaphore". A semaphore's
	// internal lock (PATH/locks), held while a lease is taken, is no
	// holder's work and is not reported: its waits are part of the
	// semaphore's, its holds and losses are not reported at all (with one
	// lease its node may become the lease: then as "semaphore").
	Recipe string
	// Path is the lock path as the recipe was given it.
	Path string
	// Outcome, for LockWait: one of the Outcome* constants.
	Outcome string
	// Cause, for LockLost: one of the Cause* constants.
	Cause string
	// Duration: the wait (LockWait) or the hold (LockHold); 0 otherwise.
	Duration time.Duration
}

// LeaderMetric is the start or the end of a leader term.
type LeaderMetric struct {
	// Path is the election's path.
	Path string
	// Leading is true when the term starts, false when it ends.
	Leading bool
	// Duration is the term's length, when it ends.
	Duration time.Duration
}

// WithMetrics sets where the session and its recipes report what they do
// (default: nowhere, at the cost of a nil check). nil is invalid.
func WithMetrics(m Metrics) Option {
	return func(c *config) error {
		if m == nil {
			return fmt.Errorf("nil metrics: %w", ErrInvalidArgument)
		}
		c.metrics = m
		return nil
	}
}

// causeError is a lease's loss reason that says its cause for Metrics.
type causeError struct {
	cause string
	err   error
}

func (e *causeError) Error() string { return e.err.Error() }
func (e *causeError) Unwrap() error { return e.err }

func causeErr(cause string, err error) error { return &causeError{cause: cause, err: err} }

// causeReleased is the cause of a lease's end by release: no loss.
const causeReleased = "released"

// lockPath is the lease's lock path: the one its recipe gave, else its
// node's parent.
func (l *Lease) lockPath() string {
	if l.lock != "" {
		return l.lock
	}
	return path.Dir(l.path)
}

// lostCause classifies why a lease ended: a Cause*, or causeReleased.
func lostCause(reason error) string {
	var ce *causeError
	switch {
	case errors.As(reason, &ce):
		return ce.cause
	case errors.Is(reason, ErrSessionExpired):
		return CauseExpiry
	case errors.Is(reason, ErrSessionTimeout):
		return CauseLocalTimer
	case errors.Is(reason, errSuspendedLost):
		return CauseSuspended
	case errors.Is(reason, ErrClosed):
		return CauseClosed
	}
	return CauseOther
}
