package metrics

import "time"

// Hooks are the functions a session calls for what it and its recipes do.
// A nil hook is skipped: set only those you export. Fields may be added.
type Hooks struct {
	// State is every state transition of the session (as
	// conn.Session.Subscribe delivers it); "Connected" is a new epoch.
	State func(Transition)
	// Request is every request attempt sent to ZooKeeper, retries
	// included, with its latency.
	Request func(Request)
	// Lock is one event of a lock or election: a wait that ended, a hold
	// that ended, a local handoff, a lost lease or a revoke request.
	Lock func(Lock)
	// Leader is the start (Leading) or the end (with the term's Duration)
	// of a leader term of leader.Election.Run.
	Leader func(Leader)
	// Watches is a change (+1 or -1) of the number of watches the session
	// has on the servers; a gauge is the sum of the deltas. A watch is a
	// path and a kind (data or child), one for all the callers waiting on
	// it, counted until it fires, its last caller stops waiting, or its
	// epoch ends.
	Watches func(delta int)
}

// Transition is one state transition of a session.
type Transition struct {
	// State is the new state as conn.State's String gives it: "Connected",
	// "Suspended", "Reconnected", "Lost" or "Closed".
	State string
	// SessionID is the epoch's session (for Lost and Closed, the one ended).
	SessionID int64
	// Err says why the epoch ended, for Lost and Closed.
	Err error
	// Time is when the session manager saw the transition.
	Time time.Time
}

// Request is one request attempt to ZooKeeper.
type Request struct {
	// Op is the operation: one of the Op* names.
	Op string
	// Duration is from the send to the answer, or until the caller gave up.
	Duration time.Duration
	// Err is the request's error (zk.ErrNoNode included), nil on success.
	Err error
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
	// OpGetACL: a waiter reads its predecessor's ACL with its data.
	OpGetACL = "getacl"
	// OpSetACL: rwlock marks a write node it keeps after a downgrade.
	OpSetACL = "setacl"
)

// Lock is one event of a lock, a semaphore lease or an election candidacy.
type Lock struct {
	// Event is one of the Lock* constants.
	Event string
	// Recipe is "mutex", "rwlock", "semaphoremutex", "semaphore",
	// "leader" or "exclusive". A semaphoremutex's holds and losses are
	// reported as "semaphore"; a semaphore's internal lock is not reported
	// on its own (its waits are part of the semaphore's).
	Recipe string
	// Path is the lock path as the recipe was given it.
	Path string
	// Outcome, for LockWait: one of the Outcome* constants.
	Outcome string
	// Cause, for LockLost: one of the Cause* constants.
	Cause string
	// Duration is the wait (LockWait) or the hold (LockHold); 0 otherwise.
	Duration time.Duration
}

// What a Lock reports (its Event).
const (
	// LockWait: an Acquire or TryAcquire (or a leader's campaign) returned
	// after Duration, with an Outcome. A re-entry, which asks for nothing,
	// is not reported, nor is a call refused for its label.
	LockWait = "wait"
	// LockHold: a grant not lost before was released (Release, Resign, a
	// local handoff) after Duration. A grant ends in one LockHold or one
	// LockLost, never both.
	LockHold = "hold"
	// LockHandoff: a grant was passed to a local waiter of the same
	// session, without a ZooKeeper round trip.
	LockHandoff = "handoff"
	// LockLost: a held lease was found lost, with a Cause: once per lease,
	// when it learns it (its Lost, Err, Fence, a guarded write, or at the
	// latest its release).
	LockLost = "lost"
	// LockRevokeRequest: someone asked the holder to release (its
	// Lease.Revoked channel was closed).
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
	// Path is the election's path.
	Path string
	// Leading is true when the term starts, false when it ends.
	Leading bool
	// Duration is the term's length, when it ends.
	Duration time.Duration
}
