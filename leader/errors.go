package leader

import (
	"errors"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrLeaseLost, ...) and
// of the caller's context (context.Canceled, context.DeadlineExceeded) are
// wrapped, not replaced.
var (
	// ErrCampaigning: Campaign or Run was called while this handle already
	// campaigns or leads. One handle is one participant: make a handle per
	// participant, or Resign first.
	ErrCampaigning = errors.New("leader: already campaigning or leading")

	// ErrNoLeader: Leader found no participant under the election path.
	ErrNoLeader = errors.New("leader: no leader")

	// ErrLeadershipLost: Run's term ended because leadership was no longer
	// safe (the lease's Lost closed: the session's epoch ended, the node was
	// deleted by someone else, Resign was called, or the session's
	// suspension policy counts a suspended connection as lost). The error
	// also matches conn.ErrLeaseLost and the lease's reason.
	ErrLeadershipLost = errors.New("leader: leadership lost")
)
