package locktest

import (
	"sort"
	"time"
)

// Turn is one grant of an exclusive lock in a run where our contenders
// share the lock path with other clients' (Curator, kazoo): who was
// granted, when, and, for ours, on which lock node (Lease.Path).
type Turn struct {
	Foreign string // the other client's name; "" for one of ours
	Node    string // our grant's lock node; unused for foreign turns
	Start   time.Time
}

// TurnFigures are what the in-process handoff (WithLocalHandoff) does to
// the turns of a run.
type TurnFigures struct {
	// LocalHandoffs counts our grants made on a node that an earlier grant
	// of ours already held: without local handoff every grant has a node
	// of its own, and it is 0.
	LocalHandoffs int
	// MaxPerNode is the most grants of ours on one node: at most
	// maxPasses+1 with WithLocalHandoff(maxPasses, ...), 1 without.
	MaxPerNode int
	// MaxRun is the most grants of ours between two consecutive grants of
	// one foreign client: how long the other clients waited for their
	// turns, counted in our holds.
	MaxRun int
}

// Turns computes the figures of turns, in any order (they are sorted by
// Start). Pure, for table tests.
func Turns(turns []Turn) TurnFigures {
	ts := append([]Turn(nil), turns...)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Start.Before(ts[j].Start) })
	var f TurnFigures
	perNode := map[string]int{}
	run := map[string]int{} // per foreign client: our grants since its last grant
	for _, t := range ts {
		if t.Foreign != "" {
			if n, ok := run[t.Foreign]; ok {
				f.MaxRun = max(f.MaxRun, n)
			}
			run[t.Foreign] = 0
			continue
		}
		for k := range run {
			run[k]++
		}
		perNode[t.Node]++
		if perNode[t.Node] > 1 {
			f.LocalHandoffs++
		}
		f.MaxPerNode = max(f.MaxPerNode, perNode[t.Node])
	}
	return f
}
