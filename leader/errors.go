package leader

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrLeaseLost, conn.ErrInvalidPath, ...) and
// of the caller's context (context.Canceled, context.DeadlineExceeded) are
// wrapped, not replaced.
var (
	// ErrNilSession: New was given a nil session.
	ErrNilSession = errors.New("leader: nil session")

	// ErrEmptyID: New was given an empty participant id.
	ErrEmptyID = errors.New("leader: empty participant id")

	// ErrInvalidPath: New was given an election path that is not a valid
	// absolute ZooKeeper path. It also matches conn.ErrInvalidPath (or
	// conn.ErrReservedPath), the session's own reason.
	ErrInvalidPath = errors.New("leader: invalid election path")

	// ErrNotLeader: Resign was called while this handle does not lead (it
	// never campaigned, already resigned, or Run's term ended). Nothing
	// changed. It also matches lock.ErrNotHeld, the root shared with the
	// locks of this module.
	ErrNotLeader = fmt.Errorf("leader: not leader: %w", lock.ErrNotHeld)

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

	// ErrReleasePending is lock.ErrReleasePending (the same value): Resign
	// could not confirm that our node is gone (the connection was lost, or
	// ctx ended mid-request) while the session lives. The handle no longer
	// leads and its lease is marked released, but other participants may
	// still see our node first until the background deletion succeeds or
	// the session ends.
	ErrReleasePending = lock.ErrReleasePending
)
