package fault

import (
	"testing"
	"time"
)

// TestHoldConflicts checks the fault run's interval sweep without a server.
func TestHoldConflicts(t *testing.T) {
	t0 := time.Date(2025, 6, 11, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	iv := func(client int, mode holdMode, start, release, lost int) *interval {
		v := &interval{client: client, mode: mode, start: at(start), release: at(release)}
		if lost >= 0 {
			v.lost = at(lost)
		}
		return v
	}
	expired := func(v *interval, ms int) *interval {
		v.expired = at(ms)
		return v
	}
	for _, tc := range []struct {
		name     string
		capacity int
		ivs      []*interval
		want     int
	}{
		{"empty", 1, nil, 0},
		{"back to back", 1, []*interval{iv(0, modeExclusive, 0, 10, -1), iv(1, modeExclusive, 10, 20, -1)}, 0},
		{"overlap", 1, []*interval{iv(0, modeExclusive, 0, 10, -1), iv(1, modeExclusive, 5, 20, -1)}, 1},
		{"lost before the next grant", 1, []*interval{iv(0, modeExclusive, 0, 50, 8), iv(1, modeExclusive, 9, 20, -1)}, 0},
		{"lost after the next grant", 1, []*interval{iv(0, modeExclusive, 0, 50, 12), iv(1, modeExclusive, 9, 20, -1)}, 1},
		{"lost after the release", 1, []*interval{iv(0, modeExclusive, 0, 10, 11), iv(1, modeExclusive, 10, 20, -1)}, 0},
		{"nested", 1, []*interval{iv(0, modeExclusive, 0, 100, -1), iv(1, modeExclusive, 10, 20, -1), iv(2, modeExclusive, 30, 40, -1)}, 2},
		{"readers share", 1, []*interval{iv(0, modeRead, 0, 10, -1), iv(1, modeRead, 5, 20, -1)}, 0},
		{"writer among readers", 1, []*interval{iv(0, modeRead, 0, 10, -1), iv(1, modeRead, 5, 20, -1), iv(2, modeExclusive, 15, 30, -1)}, 1},
		{"reader under a writer", 1, []*interval{iv(0, modeExclusive, 0, 10, -1), iv(1, modeRead, 5, 20, -1)}, 1},
		{"three leases of three", 3, []*interval{iv(0, modeShared, 0, 10, -1), iv(1, modeShared, 1, 10, -1), iv(2, modeShared, 2, 10, -1)}, 0},
		{"four leases of three", 3, []*interval{iv(0, modeShared, 0, 10, -1), iv(1, modeShared, 1, 10, -1), iv(2, modeShared, 2, 10, -1), iv(3, modeShared, 3, 10, -1)}, 3},
		{"expired before the next grant", 1, []*interval{expired(iv(0, modeExclusive, 0, 50, 12), 8), iv(1, modeExclusive, 9, 20, -1)}, 0},
		{"expired after the next grant", 1, []*interval{expired(iv(0, modeExclusive, 0, 50, 12), 10), iv(1, modeExclusive, 9, 20, -1)}, 1},
		{"expired before the grant", 1, []*interval{expired(iv(0, modeExclusive, 5, 50, 12), 3), iv(1, modeExclusive, 9, 20, -1)}, 0},
		{"lease freed in time", 3, []*interval{iv(0, modeShared, 0, 3, -1), iv(1, modeShared, 1, 10, -1), iv(2, modeShared, 2, 10, -1), iv(3, modeShared, 3, 10, -1)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := holdConflicts(tc.ivs, tc.capacity, (*interval).end)
			if len(got) != tc.want {
				t.Errorf("holdConflicts = %d conflicts, want %d: %q", len(got), tc.want, got)
			}
			strict := holdConflicts(tc.ivs, tc.capacity, (*interval).strictEnd)
			if len(strict) < len(got) {
				t.Errorf("the strict end finds fewer conflicts (%d) than the end with expiries (%d)", len(strict), len(got))
			}
		})
	}
}
