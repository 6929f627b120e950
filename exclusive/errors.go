package exclusive

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Errors returned by this package. Compare with errors.Is; they are wrapped
// with the lock path and, where there is one, the underlying cause.
var (
	// ErrInvalidOption: New was given a nil option or an option with an
	// invalid value. It matches conn.ErrInvalidOption too, as every other
	// package's invalid options do.
	ErrInvalidOption = fmt.Errorf("exclusive: %w", conn.ErrInvalidOption)
)
