package rwlock

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrLeaseLost, conn.ErrInvalidPath, ...) and
// of the caller's context (context.DeadlineExceeded, context.Canceled) are
// wrapped, not replaced.
var (
	// ErrUpgrade: the write lock was asked for by a goroutine that holds
	// the read lock but not the write lock. Upgrading would deadlock as
	// soon as two readers tried it, so it is refused at once; nothing
	// changed. Release the read lock first.
	ErrUpgrade = errors.New("rwlock: upgrade from the read lock to the write lock is not supported (release the read lock first)")

	// ErrNotOwner: Release was called by a goroutine that does not hold
	// that lock (read or write) while another goroutine of this process
	// does, through the same handle. Nothing changed.
	ErrNotOwner = errors.New("rwlock: not owner")

	// ErrNotHeld: Release was called while no goroutine of this process
	// holds that lock through the handle: it was never acquired, or it was
	// released as often as it was acquired. Nothing changed. It also
	// matches conn.ErrNotHeld, the root shared by every lock of this module.
	ErrNotHeld = fmt.Errorf("rwlock: not held: %w", conn.ErrNotHeld)

	// ErrReleasePending: the last Release could not confirm that the lock
	// node is gone (the connection was lost, or ctx ended mid-request)
	// while the session lives. The caller no longer holds the lock and its
	// lease is marked released, but other processes may still see the
	// node; it is deleted in the background until it is gone or the
	// session ends. The error also matches the cause, and
	// conn.ErrReleasePending, the root shared by every lock of this module.
	ErrReleasePending = fmt.Errorf("rwlock: release pending (lock node may still exist; deleting in the background): %w", conn.ErrReleasePending)

	// ErrNilSession: New was given a nil session.
	ErrNilSession = errors.New("rwlock: nil session")

	// ErrInvalidHost: the host given with WithHost cannot be part of a node
	// name: empty, containing '/', or with characters ZooKeeper rejects.
	// Also matches conn.ErrInvalidOption.
	ErrInvalidHost = errors.New("rwlock: invalid host")
)
