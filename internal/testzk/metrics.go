package testzk

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// Recorder keeps what its Hooks are told, for tests of the events the
// session and the recipes report.
type Recorder struct {
	mu       sync.Mutex
	states   []string
	requests map[string]int
	locks    []metrics.Lock
	leader   []metrics.Leader
	watches  int
}

// Hooks returns hooks that record into r, for conn.WithMetrics.
func (r *Recorder) Hooks() metrics.Hooks {
	return metrics.Hooks{State: r.State, Request: r.Request, Lock: r.Lock, Leader: r.Leader, Watches: r.Watches}
}

// State is the State hook.
func (r *Recorder) State(e metrics.Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, e.State)
}

// Request is the Request hook.
func (r *Recorder) Request(m metrics.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.requests == nil {
		r.requests = map[string]int{}
	}
	r.requests[m.Op]++
}

// Lock is the Lock hook.
func (r *Recorder) Lock(m metrics.Lock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.locks = append(r.locks, m)
}

// Leader is the Leader hook.
func (r *Recorder) Leader(m metrics.Leader) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leader = append(r.leader, m)
}

// Watches is the Watches hook.
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
func (r *Recorder) Take() []metrics.Lock {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.locks
	r.locks = nil
	return l
}

// TakeLeader returns the leader events recorded since the last call.
func (r *Recorder) TakeLeader() []metrics.Leader {
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
		if s == conn.Connected.String() {
			n++
		}
	}
	return n
}

// LockEvents returns ms without their durations, for comparing.
func LockEvents(ms []metrics.Lock) []metrics.Lock {
	out := make([]metrics.Lock, len(ms))
	for i, m := range ms {
		m.Duration = 0
		out[i] = m
	}
	return out
}
