package multilock

import (
	"errors"
)

// Errors returned by this package. Compare with errors.Is; the errors of
// the locks underneath are wrapped with their path and joined
// (errors.Join), so errors.Is also finds them (context.DeadlineExceeded,
// conn.ErrLeaseLost, ...).
var (
	// ErrBusy: Acquire was called while this MultiLock is held (wholly, or
	// partly: see ErrPartlyReleased), or being acquired or released by
	// another call.
	ErrBusy = errors.New("multilock: already held, or being acquired or released")

	// ErrPartlyReleased: some lock's Release failed and left it held; the
	// MultiLock is held by those locks only (named in the error): call
	// Release again, which retries just them.
	ErrPartlyReleased = errors.New("multilock: partly released (call Release again)")
)
