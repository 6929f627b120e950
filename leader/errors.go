package leader

import (
	"errors"
)

// Errors returned by this package, compared with errors.Is.
var (
	// ErrCampaigning: Campaign or Run on a handle that already campaigns or
	// leads. One handle is one participant.
	ErrCampaigning = errors.New("leader: already campaigning or leading")

	// ErrNoLeader: Leader found no participant under the election path.
	ErrNoLeader = errors.New("leader: no leader")

	// ErrLeadershipLost: Run's term ended because the lease's Lost closed.
	// It also matches conn.ErrLeaseLost and the lease's reason.
	ErrLeadershipLost = errors.New("leader: leadership lost")
)
