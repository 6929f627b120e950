package mutex

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrLeaseLost, ...) and of the caller's
// context (context.DeadlineExceeded, context.Canceled) are wrapped, not
// replaced.
var (
	// ErrNotOwner: Release was called by a goroutine that does not hold the
	// mutex while another goroutine of this process does. Nothing changed.
	ErrNotOwner = errors.New("mutex: not owner")

	// ErrNotHeld: Release was called while no goroutine of this process
	// holds the mutex: it was never acquired, or it was released as often
	// as it was acquired. Nothing changed. It also matches conn.ErrNotHeld,
	// the root shared by every lock of this module.
	ErrNotHeld = fmt.Errorf("mutex: not held: %w", conn.ErrNotHeld)

	// ErrReleasePending: the last Release could not confirm that the lock
	// node is gone (the connection was lost, or ctx ended mid-request)
	// while the session lives. The mutex no longer counts as held by the
	// caller and its lease is marked released, but other processes may
	// still see the node; it is deleted in the background until it is gone
	// or the session ends. The error also matches the cause, and
	// conn.ErrReleasePending, the root shared by every lock of this module.
	ErrReleasePending = fmt.Errorf("mutex: release pending (lock node may still exist; deleting in the background): %w", conn.ErrReleasePending)

	// ErrNilSession: New was given a nil session.
	ErrNilSession = errors.New("mutex: nil session")
)
