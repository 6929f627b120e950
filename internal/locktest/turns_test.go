package locktest

import (
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
