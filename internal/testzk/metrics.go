package testzk

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Recorder is a conn.Metrics that keeps what it is told, for tests of the
// events the session and the recipes report.
type Recorder struct {
	mu       sync.Mutex
	states   []conn.State
	requests map[string]int
	locks    []conn.LockMetric
	leader   []conn.LeaderMetric
	watches  int
}

// State implements conn.Metrics.
func (r *Recorder) State(e conn.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, e.State)
}

// Request implements conn.Metrics.
func (r *Recorder) Request(m conn.RequestMetric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.requests == nil {
		r.requests = map[string]int{}
	}
	r.requests[m.Op]++
}

// Lock implements conn.Metrics.
func (r *Recorder) Lock(m conn.LockMetric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.locks = append(r.locks, m)
}

// Leader implements conn.Metrics.
func (r *Recorder) Leader(m conn.LeaderMetric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leader = append(r.leader, m)
}

// Watches implements conn.Metrics.
func (r *Recorder) Watches(delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches += delta
}

// WatchGauge is the sum of the Watches deltas recorded: the session's
// watches on the servers, as an adapter's gauge shows them.
func (r *Recorder) WatchGauge() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watches
}

// Take returns the lock events recorded since the last Take.
func (r *Recorder) Take() []conn.LockMetric {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.locks
	r.locks = nil
	return l
}

// TakeLeader returns the leader events recorded since the last call.
func (r *Recorder) TakeLeader() []conn.LeaderMetric {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.leader
	r.leader = nil
	return l
}

// Requests is the number of requests of operation op recorded.
func (r *Recorder) Requests(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[op]
}

// Connected is the number of Connected transitions (epochs) recorded.
func (r *Recorder) Connected() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.states {
		if s == conn.Connected {
			n++
		}
	}
	return n
}

// LockEvents returns ms without their durations, for comparing.
func LockEvents(ms []conn.LockMetric) []conn.LockMetric {
	out := make([]conn.LockMetric, len(ms))
	for i, m := range ms {
		m.Duration = 0
		out[i] = m
	}
	return out
}
