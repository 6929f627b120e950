// Package metrics is what a session and the recipes on it report, for a
// service to export: a Hooks given to conn.WithMetrics. The adapters are
// modules of their own, so that the library needs no metrics dependency:
// github.com/zkrecipes/zkrecipes/metrics/prometheus and
// github.com/zkrecipes/zkrecipes/metrics/otel.
//
// The hooks are called synchronously and concurrently, from the goroutine
// of the event: they must be quick, must not block and must not call back
// into the session. Paths are passed without namespace. See
// docs/operations.md, "Metrics".
package metrics

import "time"

// Hooks are the functions a session calls for what it and its recipes do.
// A nil hook is skipped: set only those you export. Fields may be added.
type Hooks struct {
	State   func(Transition) // every state transition; "Connected" is a new epoch
	Request func(Request)    // every request attempt, retries and the quorum timer's syncs included
	Lock    func(Lock)       // one event of a lock or election (the Lock* events)
	Leader  func(Leader)     // the start or end of a term of leader.Election.Run
	// Watches is a change (+1 or -1) of the number of watches the session
	// has on the servers; a gauge is the sum of the deltas.
	Watches func(delta int)
}

// Transition is one state transition of a session.
type Transition struct {
	State     string    // the new state, as conn.State's String gives it
	SessionID int64     // the epoch's session (for Lost and Closed, the one ended)
	Err       error     // why the epoch ended, for Lost and Closed
	Time      time.Time // when the session manager saw the transition
}

// Request is one request attempt to ZooKeeper.
type Request struct {
	Op       string        // one of the Op* names
	Duration time.Duration // from the send to the answer, or until the caller gave up
	Err      error         // the request's error (zk.ErrNoNode included), nil on success
}

// Operation names: Request.Op.
const (
	OpCreate   = "create"
	OpDelete   = "delete"
	OpGet      = "get"
	OpGetW     = "getw"
	OpChildren = "children"
	OpExists   = "exists"
	OpSet      = "set"
	OpMulti    = "multi"
	OpSync     = "sync"
	OpAuth     = "auth"
	OpGetACL   = "getacl" // a waiter reads its predecessor's ACL with its data
	OpSetACL   = "setacl" // rwlock marks a write node it keeps after a downgrade
)

// Lock is one event of a lock, a semaphore lease or an election candidacy.
type Lock struct {
	Event string // one of the Lock* constants
	// Recipe is "mutex", "rwlock", "semaphoremutex", "semaphore", "leader"
	// or "exclusive"; a semaphoremutex's events but its waits (holds,
	// losses, revoke requests, local handoffs) are reported as "semaphore".
	Recipe   string
	Path     string        // the lock path as the recipe was given it
	Outcome  string        // for LockWait: one of the Outcome* constants
	Cause    string        // for LockLost: one of the Cause* constants
	Duration time.Duration // the wait (LockWait) or the hold (LockHold); 0 otherwise
}

// What a Lock reports (its Event).
const (
	// LockWait: an Acquire or TryAcquire (or a leader's campaign) returned
	// after Duration, with an Outcome (a re-entry is not reported).
	LockWait = "wait"
	// LockHold: a grant not lost before was released (Release, Resign, a
	// local handoff) after Duration. A grant ends in one LockHold or one
	// LockLost, never both.
	LockHold = "hold"
	// LockHandoff: a grant was passed to a local waiter of the same session.
	LockHandoff = "handoff"
	// LockLost: a held lease was found lost, with a Cause, once.
	LockLost = "lost"
	// LockRevokeRequest: someone asked the holder to release (Lease.Revoked).
	LockRevokeRequest = "revoke_request"
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
	CauseExpiry      = "expiry"       // the server expired the session (conn.ErrSessionExpired)
	CauseLocalTimer  = "local_timer"  // the local timer ended the epoch (conn.ErrSessionTimeout)
	CauseNodeDeleted = "node_deleted" // the node was deleted or replaced by another session while the epoch lived
	CauseSuspended   = "suspended"    // the connection was suspended under conn.WithSuspendedAsLost
	CauseClosed      = "closed"       // the session was closed while the lease was held (its own deletion of its nodes included)
	CauseOther       = "other"        // anything else (the node's watch failed)
)

// Leader is the start or the end of a leader term.
type Leader struct {
	Path     string        // the election's path
	Leading  bool          // true when the term starts, false when it ends
	Duration time.Duration // the term's length, when it ends
}
