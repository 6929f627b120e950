package mutex

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrLeaseLost, ...) and of the caller's
// context (context.DeadlineExceeded, context.Canceled) are wrapped, not
// replaced.
var (
	// ErrNotOwner is lock.ErrNotOwner (the same value): Release was called
	// by a goroutine that does not hold the mutex while another goroutine of this
	// process does. Nothing changed.
	ErrNotOwner = lock.ErrNotOwner

	// ErrNotHeld is lock.ErrNotHeld (the same value): Release was called
	// while no goroutine of this process holds the mutex: it was never acquired,
	// or it was released as often as it was acquired. Nothing changed.
	ErrNotHeld = lock.ErrNotHeld

	// ErrReleasePending is lock.ErrReleasePending (the same value): the last Release
	// could not confirm that the lock node is gone (the connection was lost, or ctx
	// ended mid-request) while the session lives. The caller no longer holds the mutex
	// and its lease is marked released, but other processes may still see
	// the node; it is deleted in the background until it is gone or the
	// session ends. The error also matches the cause.
	ErrReleasePending = lock.ErrReleasePending

	// ErrNilSession: New was given a nil session.
	ErrNilSession = errors.New("mutex: nil session")
)
