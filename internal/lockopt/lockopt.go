// Package lockopt is the configuration that lock.Option sets: one struct
// for every recipe, so that the recipes share one option vocabulary. Each
// recipe's New says which options it takes (queue.Configure refuses the
// others).
package lockopt

import (
	"strings"
	"time"
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

// Bound limits the in-process handoff: after MaxPasses local handoffs on a
// node, or once Budget has passed since it was granted (<= 0: no time
// budget), the release deletes the node instead of passing it on.
type Bound struct {
	MaxPasses int
	Budget    time.Duration
}

// Config is what the options set. Given records which options were
// applied, whatever their values.
type Config struct {
	Given     Set
	Revocable bool
	Handoff   *Bound // nil: no in-process handoff
	Host      string // rwlock's node-name identity; meaningful when Given has Host
	Requeue   bool
	Relist    bool
}
