package conn

import (
	"fmt"
	"time"
)

// State is a Session's state as lock holders see it (Curator's names).
type State int32

const (
	// Connected: a new epoch (ZooKeeper session) has begun. Sent for the
	// first session and for every session opened after one was lost.
	Connected State = iota + 1
	// Suspended: the connection broke; the session may still be alive on
	// the server. Holders keep their locks unless the error policy says
	// otherwise (WithSuspendedAsLost).
	Suspended
	// Reconnected: the connection is back and the same session survived.
	Reconnected
	// Lost: the epoch ended (expiry confirmed, or the local timer ran out);
	// every lock of the epoch is gone.
	Lost
	// Closed: Close was called. Final.
	Closed
)

func (s State) String() string {
	switch s {
	case Connected:
		return "Connected"
	case Suspended:
		return "Suspended"
	case Reconnected:
		return "Reconnected"
	case Lost:
		return "Lost"
	case Closed:
		return "Closed"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Event is one state transition of a Session.
type Event struct {
	State State
	// Epoch is the epoch the transition belongs to: the new one for
	// Connected, the one that ended for Lost and Closed.
	Epoch *Epoch
	// Err says why the epoch ended, for Lost and Closed: it matches
	// ErrSessionExpired, ErrSessionTimeout or ErrClosed.
	Err error
	// Time is when the session manager saw the transition.
	Time time.Time
}
