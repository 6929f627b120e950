package queue

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Configure is the prologue of every recipe's New: it checks sess, applies
// opts to cfg (a nil option is conn.ErrInvalidArgument) and validates path.
// Its errors are prefixed with recipe.
func Configure[C any, O ~func(*C) error](recipe string, sess *conn.Session, path string, cfg *C, opts []O) error {
	if sess == nil {
		return fmt.Errorf("%s: new %s: nil session: %w", recipe, path, conn.ErrInvalidArgument)
	}
	for _, o := range opts {
		if o == nil {
			return fmt.Errorf("%s: new %s: nil option: %w", recipe, path, conn.ErrInvalidArgument)
		}
		if err := o(cfg); err != nil {
			return err
		}
	}
	if err := zkpath.Validate(path); err != nil {
		return fmt.Errorf("%s: new %s: %w", recipe, path, err)
	}
	return nil
}
