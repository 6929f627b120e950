package queue

import (
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Configure is the prologue of every recipe's New ("mutex.New"): it checks
// sess, applies opts, refuses a nil option and any option not in takes,
// and validates path. Its errors are prefixed with the recipe's package and
// match conn.ErrInvalidArgument.
func Configure(ctor string, sess *conn.Session, path string, takes lockopt.Set, opts []lock.Option) (lockopt.Config, error) {
	var cfg lockopt.Config
	recipe, _, _ := strings.Cut(ctor, ".")
	if sess == nil {
		return cfg, fmt.Errorf("%s: new %s: nil session: %w", recipe, path, conn.ErrInvalidArgument)
	}
	for _, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("%s: new %s: nil option: %w", recipe, path, conn.ErrInvalidArgument)
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	if refused := cfg.Given &^ takes; refused != 0 {
		return cfg, fmt.Errorf("%s: new %s: %s: not an option of %s: %w", recipe, path, refused, ctor, conn.ErrInvalidArgument)
	}
	if err := zkpath.Validate(path); err != nil {
		return cfg, fmt.Errorf("%s: new %s: %w", recipe, path, err)
	}
	return cfg, nil
}
