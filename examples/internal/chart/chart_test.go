package chart

import (
	"strings"
	"testing"
)

// TestRoundTicks: round steps (1, 2 or 5 times a power of ten), at most
// seven, with as many decimals as the step needs; none for an empty range.
func TestRoundTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 270.8, "0 50 100 150 200 250"},
		{0, 30, "0 5 10 15 20 25 30"},
		{0, 6.3, "0 1 2 3 4 5 6"},
		{0, 0.9, "0.0 0.2 0.4 0.6 0.8"},
		{5, 5, ""},
	} {
		var got []string
		for _, tk := range RoundTicks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("RoundTicks(%v, %v) = %q, want %q", tc.lo, tc.hi, s, tc.want)
		}
	}
}
