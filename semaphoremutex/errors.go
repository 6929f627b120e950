package semaphoremutex

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrInvalidPath, ...) and of the caller's
// context (context.DeadlineExceeded, context.Canceled) are wrapped, not
// replaced.
var (
	// ErrNotHeld is lock.ErrNotHeld (the same value): Release was given a
	// lease this handle does not hold (nil, granted by another handle, or
	// already released), or Mutex.Release was called while the mutex is
	// not held through the handle. Nothing changed.
	ErrNotHeld = lock.ErrNotHeld

	// ErrReleasePending is lock.ErrReleasePending (the same value): Release
	// could not confirm that the lease's node is gone (the connection was lost, or ctx
	// ended mid-request) while the session lives. The handle no longer holds the lease
	// and its lease is marked released, but other processes may still see
	// the node; it is deleted in the background until it is gone or the
	// session ends. The error also matches the cause.
	ErrReleasePending = lock.ErrReleasePending

	// ErrNilSession: New or NewSemaphore was given a nil session.
	ErrNilSession = errors.New("semaphoremutex: nil session")

	// ErrInvalidLeases: NewSemaphore was asked for fewer than one lease.
	ErrInvalidLeases = errors.New("semaphoremutex: the number of leases must be at least 1")
)

// errRestart: the epoch ended under an attempt, or our lease node was
// deleted by someone else; start over with the internal lock. Never
// returned to callers.
var errRestart = errors.New("semaphoremutex: start over")
