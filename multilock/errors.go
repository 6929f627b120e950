package multilock

import (
	"errors"
)

// Errors returned by this package, compared with errors.Is.
var (
	// ErrBusy: Acquire while this MultiLock is held (even partly), or
	// being acquired or released by another call.
	ErrBusy = errors.New("multilock: already held, or being acquired or released")

	// ErrPartlyReleased: some lock's Release failed and left it held; the
	// MultiLock is held by those locks only (named in the error): call
	// Release again, which retries just them.
	ErrPartlyReleased = errors.New("multilock: partly released (call Release again)")
)
