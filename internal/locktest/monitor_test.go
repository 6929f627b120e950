package locktest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestOverlaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	iv := func(who, from, to int) Interval { return Interval{Who: who, Start: at(from), End: at(to)} }
	tests := []struct {
		name    string
		history []Interval
		want    [][2]int // pairs of Who
	}{
		{"empty", nil, nil},
		{"one", []Interval{iv(1, 0, 10)}, nil},
		{"back to back", []Interval{iv(1, 0, 10), iv(2, 10, 20), iv(3, 20, 30)}, nil},
		{"unsorted, disjoint", []Interval{iv(3, 20, 30), iv(1, 0, 10), iv(2, 11, 19)}, nil},
		{"overlap", []Interval{iv(1, 0, 10), iv(2, 5, 20)}, [][2]int{{1, 2}}},
		{"nested", []Interval{iv(1, 0, 100), iv(2, 10, 20), iv(3, 30, 40)}, [][2]int{{1, 2}, {1, 3}}},
		{"same start", []Interval{iv(1, 0, 10), iv(2, 0, 10)}, [][2]int{{1, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got [][2]int
			for _, p := range Overlaps(tc.history) {
				got = append(got, [2]int{p[0].Who, p[1].Who})
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestOptions(t *testing.T) {
	c := defaultConfig()
	for _, o := range []Option{WithFIFO(true), WithContenders(1), WithRounds(0), WithSessionTimeout(time.Millisecond), WithEnsemble(false)} {
		o(&c)
	}
	assert.True(t, c.fifo)
	assert.Equal(t, 2, c.contenders, "raised to 2")
	assert.Equal(t, 1, c.rounds, "raised to 1")
	assert.Equal(t, time.Second, c.sessionTimeout, "raised to 1s")
	assert.False(t, c.ensemble)
	assert.Nil(t, c.cluster)
}
