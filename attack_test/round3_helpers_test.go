package attack_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// metricsRec is a conn.Metrics that keeps the watches gauge and every lock
// event, for round 3's metric checks.
type metricsRec struct {
	conn.NopMetrics
	watches atomic.Int64
	mu      sync.Mutex
	locks   []conn.LockMetric
	states  []conn.State
}

func (m *metricsRec) Watches(d int) { m.watches.Add(int64(d)) }

func (m *metricsRec) Lock(l conn.LockMetric) {
	m.mu.Lock()
	m.locks = append(m.locks, l)
	m.mu.Unlock()
}

func (m *metricsRec) State(e conn.Event) {
	m.mu.Lock()
	m.states = append(m.states, e.State)
	m.mu.Unlock()
}

// count returns how many lock events match ev (and outcome or cause, when
// not empty).
func (m *metricsRec) count(ev conn.LockEvent, recipe, detail string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.locks {
		if l.Event != ev || (recipe != "" && l.Recipe != recipe) {
			continue
		}
		if detail != "" && l.Outcome != detail && l.Cause != detail {
			continue
		}
		n++
	}
	return n
}

func (m *metricsRec) dump() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, l := range m.locks {
		fmt.Fprintf(&b, "%s/%s/%s%s ", l.Event, l.Recipe, l.Outcome, l.Cause)
	}
	return b.String()
}

// sessionWatches lists the paths server i holds watches on for session sid
// (wchc).
func sessionWatches(t *testing.T, c *zktest.Cluster, i int, sid int64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, err := c.FourLetter(ctx, i, "wchc")
	if err != nil {
		t.Fatalf("wchc: %v", err)
	}
	var paths []string
	in := false
	want := fmt.Sprintf("0x%x", sid)
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "\t") && strings.TrimSpace(l) != "" {
			in = strings.TrimSpace(l) == want
			continue
		}
		if in && strings.TrimSpace(l) != "" {
			paths = append(paths, strings.TrimSpace(l))
		}
	}
	return paths
}

// epochOf returns the session's live epoch.
func epochOf(t *testing.T, s *conn.Session) *conn.Epoch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep, err := s.Epoch(ctx)
	if err != nil {
		t.Fatalf("epoch: %v", err)
	}
	return ep
}

// eventually polls cond every 10 ms for up to d and reports whether it held.
func eventually(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
