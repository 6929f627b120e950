package semaphoremutex

import (
	"errors"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrInvalidPath, ...) and of the caller's
// context (context.DeadlineExceeded, context.Canceled) are wrapped, not
// replaced.
var (
	// ErrInvalidLeases: NewSemaphore was asked for fewer than one lease.
	ErrInvalidLeases = errors.New("semaphoremutex: the number of leases must be at least 1")
)

// errRestart: the epoch ended under an attempt, or our lease node was
// deleted by someone else; start over with the internal lock. Never
// returned to callers.
var errRestart = errors.New("semaphoremutex: start over")
