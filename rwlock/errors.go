package rwlock

import (
	"errors"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrLeaseLost, ...) and
// of the caller's context (context.DeadlineExceeded, context.Canceled) are
// wrapped, not replaced.
var (
	// ErrUpgrade: the write lock was asked for by a goroutine that holds
	// the read lock but not the write lock. Upgrading would deadlock as
	// soon as two readers tried it, so it is refused at once; nothing
	// changed. Release the read lock first.
	ErrUpgrade = errors.New("rwlock: upgrade from the read lock to the write lock is not supported (release the read lock first)")
)
