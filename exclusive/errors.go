package exclusive

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
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
	// invalid value.
	ErrInvalidOption = errors.New("exclusive: invalid option")

	// ErrNotHeld: Release was called on a handle that holds nothing. It
	// also matches conn.ErrNotHeld, the root shared by every lock of this
	// module.
	ErrNotHeld = fmt.Errorf("exclusive: lock not held by this handle: %w", conn.ErrNotHeld)

	// ErrReleasePending: Release could not confirm that the lock node was
	// deleted (the connection dropped or ctx ended with the delete in
	// flight). The handle no longer holds the lock; the node is deleted in
	// the background until it is gone or the session epoch ends, whichever
	// comes first. Other contenders may have to wait until then. It also
	// matches conn.ErrReleasePending, the root shared by every lock of this
	// module.
	ErrReleasePending = fmt.Errorf("exclusive: release not confirmed; deleting the lock node in the background: %w", conn.ErrReleasePending)
)
