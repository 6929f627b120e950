package exclusive

import (
	"fmt"

	"go.uber.org/zap"
)

// Option configures a Lock. Each option documents its default and what an
// invalid value does: New rejects it with an error matching
// ErrInvalidOption.
type Option func(*config) error

type config struct {
	logger *zap.Logger
}

// WithLogger sets the logger (default: the session's, conn.Session.Logger).
// nil is invalid.
func WithLogger(l *zap.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}
