package exclusive

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Errors returned by this package. Compare with errors.Is; they are wrapped
// with the lock path and, where there is one, the underlying cause.
var (
	// ErrNilSession: New was given a nil *conn.Session.
	ErrNilSession = errors.New("exclusive: nil session")

	// ErrInvalidPath: New was given a path conn.ValidatePath refuses. The
	// error also matches conn.ErrInvalidPath or conn.ErrReservedPath.
	ErrInvalidPath = errors.New("exclusive: invalid lock path")

	// ErrInvalidOption: New was given a nil option or an option with an
	// invalid value. It matches conn.ErrInvalidOption too, as every other
	// package's invalid options do.
	ErrInvalidOption = fmt.Errorf("exclusive: %w", conn.ErrInvalidOption)

	// ErrNotHeld is lock.ErrNotHeld (the same value): Release was called
	// while the handle holds nothing. Nothing changed.
	ErrNotHeld = lock.ErrNotHeld

	// ErrReleasePending is lock.ErrReleasePending (the same value): Release
	// could not confirm that the lock node is gone (the connection was lost, or ctx
	// ended mid-request) while the session lives. The handle no longer holds the lock
	// and its lease is marked released, but other processes may still see
	// the node; it is deleted in the background until it is gone or the
	// session ends. The error also matches the cause.
	ErrReleasePending = lock.ErrReleasePending
)
