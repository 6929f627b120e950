package locktest

import (
	"sort"
	"testing"
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

// CheckTurns fails t where the turns of a run, with sessions sessions of
// ours, break what the in-process handoff promises. With passes 0 (no
// local handoff) no two grants of ours share a node. With
// WithLocalHandoff(passes, ...): local handoffs happened; no node was
// granted more than passes+1 times; and no foreign client waited for more
// than 2·sessions·(passes+1) grants of ours between two of its own (its
// node waits behind at most one node per session of ours; twice that
// leaves room for our nodes queued while it was between two acquires). It
// returns the figures, for the log.
func CheckTurns(t testing.TB, turns []Turn, sessions, passes int) TurnFigures {
	t.Helper()
	f := Turns(turns)
	if passes == 0 {
		if f.LocalHandoffs != 0 {
			t.Errorf("locktest: without local handoff, %d grants were made on a node granted before", f.LocalHandoffs)
		}
		return f
	}
	if f.LocalHandoffs == 0 {
		t.Errorf("locktest: no local handoff happened")
	}
	if f.MaxPerNode > passes+1 {
		t.Errorf("locktest: a node was granted %d times in the process, above passes+1 = %d", f.MaxPerNode, passes+1)
	}
	if bound := 2 * sessions * (passes + 1); f.MaxRun > bound {
		t.Errorf("locktest: a foreign client waited for %d grants of ours between two of its own, above 2·sessions·(passes+1) = %d", f.MaxRun, bound)
	}
	return f
}
