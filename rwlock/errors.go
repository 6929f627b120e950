package rwlock

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/lock"
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

	// ErrNotOwner is lock.ErrNotOwner (the same value): Release was called
	// by a goroutine that does not hold that lock (read or write) through the same handle while another goroutine of this
	// process does. Nothing changed.
	ErrNotOwner = lock.ErrNotOwner

	// ErrNotHeld is lock.ErrNotHeld (the same value): Release was called
	// while no goroutine of this process holds that lock through the handle: it
	// was never acquired, or it was released as often as it was acquired. Nothing changed.
	ErrNotHeld = lock.ErrNotHeld

	// ErrReleasePending is lock.ErrReleasePending (the same value): the last Release
	// could not confirm that the lock node is gone (the connection was lost, or ctx
	// ended mid-request) while the session lives. The caller no longer holds the lock
	// and its lease is marked released, but other processes may still see
	// the node; it is deleted in the background until it is gone or the
	// session ends. The error also matches the cause.
	ErrReleasePending = lock.ErrReleasePending

	// ErrNilSession: New was given a nil session.
	ErrNilSession = errors.New("rwlock: nil session")

	// ErrInvalidHost: the host given with WithHost cannot be part of a node
	// name: empty, containing '/', or with characters ZooKeeper rejects.
	// Also matches conn.ErrInvalidOption.
	ErrInvalidHost = errors.New("rwlock: invalid host")
)
