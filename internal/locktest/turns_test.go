package locktest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTurns(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ours := func(ms int, node string) Turn {
		return Turn{Node: node, Start: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	foreign := func(ms int, who string) Turn {
		return Turn{Foreign: who, Start: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	tests := []struct {
		name  string
		turns []Turn
		want  TurnFigures
	}{
		{"empty", nil, TurnFigures{}},
		{"a node each", []Turn{ours(0, "a"), foreign(1, "curator"), ours(2, "b"), ours(3, "c"), foreign(4, "curator")},
			TurnFigures{MaxPerNode: 1, MaxRun: 2}},
		{"handed over locally", []Turn{ours(0, "a"), ours(1, "a"), ours(2, "a"), foreign(3, "kazoo"), ours(4, "b"), ours(5, "b")},
			TurnFigures{LocalHandoffs: 3, MaxPerNode: 3}},
		{"unsorted", []Turn{ours(2, "a"), foreign(3, "curator"), ours(1, "a"), foreign(0, "curator")},
			TurnFigures{LocalHandoffs: 1, MaxPerNode: 2, MaxRun: 2}},
		{"runs per foreign client", []Turn{foreign(0, "curator"), foreign(1, "kazoo"), ours(2, "a"), foreign(3, "kazoo"),
			ours(4, "a"), ours(5, "b"), foreign(6, "curator"), ours(7, "c")},
			TurnFigures{LocalHandoffs: 1, MaxPerNode: 2, MaxRun: 3}},
		{"before the first and after the last foreign turn", []Turn{ours(0, "a"), ours(1, "b"), foreign(2, "curator"), ours(3, "c"), ours(4, "d")},
			TurnFigures{MaxPerNode: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Turns(tc.turns))
		})
	}
}

// errRecorder keeps what a check reports instead of failing the test.
type errRecorder struct {
	testing.TB
	errs []string
}

func (r *errRecorder) Helper() {}
func (r *errRecorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// TestCheckTurns: each promise of the in-process handoff that the turns
// break is reported, and turns that keep them pass.
func TestCheckTurns(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var ms int
	ours := func(node string) Turn {
		ms++
		return Turn{Node: node, Start: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	curator := func() Turn {
		ms++
		return Turn{Foreign: "curator", Start: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	tests := []struct {
		name     string
		passes   int
		turns    []Turn
		failures int
	}{
		{"plain", 0, []Turn{curator(), ours("a"), ours("b"), curator()}, 0},
		{"plain, a node granted twice", 0, []Turn{ours("a"), ours("a")}, 1},
		{"handoff", 1, []Turn{curator(), ours("a"), ours("a"), ours("b"), ours("b"), curator()}, 0},
		{"handoff, none happened", 1, []Turn{ours("a"), curator(), ours("b")}, 1},
		{"handoff, above the bound per node", 1, []Turn{ours("a"), ours("a"), ours("a")}, 1},
		{"handoff, a foreign client waited too long", 1, []Turn{curator(), ours("a"), ours("a"), ours("b"), ours("b"),
			ours("c"), ours("c"), ours("d"), ours("d"), ours("e"), curator()}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &errRecorder{TB: t}
			CheckTurns(r, tc.turns, 2, tc.passes)
			assert.Len(t, r.errs, tc.failures, "%q", r.errs)
		})
	}
}
