// Package lockopt is the configuration that lock.Option sets: one struct
// for every recipe, so that the recipes share one option vocabulary.
package lockopt

import (
	"fmt"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Set is a set of options, one bit each.
type Set uint

// The options.
const (
	Revocable    Set = 1 << iota // lock.WithRevocable
	LocalHandoff                 // lock.WithLocalHandoff
	Host                         // rwlock.WithHost
	Requeue                      // leader.WithRequeue
	Relist                       // mutex.WithRelist, the benchmarks' (export_test.go)
)

var names = []string{"lock.WithRevocable", "lock.WithLocalHandoff", "rwlock.WithHost", "leader.WithRequeue", "mutex.WithRelist"}

// String names the options in s, comma-separated.
func (s Set) String() string {
	var n []string
	for i, name := range names {
		if s&(1<<i) != 0 {
			n = append(n, name)
		}
	}
	return strings.Join(n, ", ")
}

// Bound limits the in-process handoff: after MaxPasses handoffs on a node,
// or Budget (<= 0: none) after its grant, the release deletes it.
type Bound struct {
	MaxPasses int
	Budget    time.Duration
}

// Config is what the options set. Given records which options were
// applied; Configure derives the bools from it.
type Config struct {
	Given                      Set
	Revocable, Requeue, Relist bool
	Handoff                    *Bound // nil: no in-process handoff
	Host                       string // rwlock's node-name identity, when Given has Host
}

// Give returns an option without a value, which sets only s.
func Give(s Set) func(*Config) error {
	return func(c *Config) error {
		c.Given |= s
		return nil
	}
}

// Configure is the prologue of every recipe's New ("mutex.New"): it checks
// sess, applies opts, refuses a nil, a repeated or any option not in takes,
// and validates path. Its errors match conn.ErrInvalidArgument.
func Configure[O ~func(*Config) error](ctor string, sess *conn.Session, path string, takes Set, opts []O) (Config, error) {
	var cfg Config
	recipe, _, _ := strings.Cut(ctor, ".")
	fail := func(format string, a ...any) (Config, error) {
		return Config{}, fmt.Errorf("%s: new %s: %s: %w", recipe, path, fmt.Sprintf(format, a...), conn.ErrInvalidArgument)
	}
	if sess == nil {
		return fail("nil session")
	}
	for _, o := range opts {
		if o == nil {
			return fail("nil option")
		}
		var one Config // what o alone sets
		if err := o(&one); err != nil {
			return Config{}, err
		}
		switch {
		case one.Given&^takes != 0:
			return fail("%s: not an option of %s", one.Given&^takes, ctor)
		case one.Given&cfg.Given != 0:
			return fail("%s given twice", one.Given)
		}
		_ = o(&cfg)
	}
	if err := zkpath.Validate(path); err != nil {
		return Config{}, fmt.Errorf("%s: new %s: %w", recipe, path, err)
	}
	cfg.Revocable = cfg.Given&Revocable != 0
	cfg.Requeue = cfg.Given&Requeue != 0
	cfg.Relist = cfg.Given&Relist != 0
	return cfg, nil
}
