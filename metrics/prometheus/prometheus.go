// Package prometheus exports what a zkrecipes session and its recipes
// report (package metrics) as Prometheus metrics. It is a module of its
// own, so that the library needs no Prometheus dependency, and keeps the
// library's Go 1.22 (client_golang v1.22.0 or newer; v1.25 needs Go 1.26):
//
//	hooks, err := prometheus.New(prom.DefaultRegisterer)
//	sess, err := conn.Connect(ctx, servers, conn.WithMetrics(hooks))
//
// The metrics (durations in seconds, names after OpenTelemetry's
// conventions as Prometheus spells them):
//
//	zkrecipes_lock_wait_duration_seconds      histogram  recipe, path, outcome
//	zkrecipes_lock_hold_duration_seconds      histogram  recipe, path
//	zkrecipes_lock_handoffs_total             counter    recipe, path
//	zkrecipes_lock_lost_total                 counter    recipe, path, cause
//	zkrecipes_lock_revoke_requests_total      counter    recipe, path
//	zkrecipes_leader_terms_total              counter    path
//	zkrecipes_leader_leading                  gauge      path
//	zkrecipes_leader_term_duration_seconds    histogram  path
//	zkrecipes_session_transitions_total       counter    state
//	zkrecipes_session_epochs_total            counter
//	zkrecipes_session_watches                 gauge
//	zkrecipes_request_duration_seconds        histogram  op, outcome
//
// The label values are package metrics': outcome granted, not_granted,
// timeout, cancelled, error (metrics.Outcome*); cause expiry, local_timer,
// node_deleted, suspended, closed, other (metrics.Cause*); state Connected,
// Suspended, Reconnected, Lost, Closed; a request's outcome ok or error.
// Acquisitions are the wait histogram's count with outcome granted.
//
// The path label is what WithPathLabel's function makes of the lock path:
// by default "" for every lock, so that a service with one lock per order
// does not make one series per order. Give PathAsIs, or a function that
// maps the paths to a bounded set, to tell the locks apart.
package prometheus

import (
	"errors"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// Option configures New.
type Option func(*config)

type config struct {
	label func(recipe, path string) string
}

// WithPathLabel sets the function that makes the path label of a lock or
// election from its recipe ("mutex", "leader", ...) and path (default: a
// function that returns "" for all). It must return few distinct values:
// each is a series of every lock metric.
func WithPathLabel(f func(recipe, path string) string) Option {
	return func(c *config) { c.label = f }
}

// PathAsIs is a path label function that keeps the path: for services
// whose lock paths are a small fixed set.
func PathAsIs(_, path string) string { return path }

// recorder records into Prometheus collectors; its methods are the hooks.
type recorder struct {
	label func(recipe, path string) string

	wait, hold, term, request *prom.HistogramVec
	handoffs, lost, revokes   *prom.CounterVec
	terms, transitions        *prom.CounterVec
	leading                   *prom.GaugeVec
	epochs                    prom.Counter
	watches                   prom.Gauge
}

// lockBuckets are the bounds of the wait, hold and term histograms, in
// seconds: a handoff takes about a millisecond, a contended wait seconds.
var lockBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// New returns hooks, for conn.WithMetrics, that record into collectors
// registered with reg. Safe for concurrent use; the hooks may serve many
// sessions.
func New(reg prom.Registerer, opts ...Option) (metrics.Hooks, error) {
	if reg == nil {
		return metrics.Hooks{}, errors.New("zkrecipes prometheus: nil registerer")
	}
	c := config{label: func(string, string) string { return "" }}
	for _, o := range opts {
		o(&c)
	}
	if c.label == nil {
		return metrics.Hooks{}, errors.New("zkrecipes prometheus: nil path label function")
	}
	m := &recorder{label: c.label}
	hist := func(name, help string, buckets []float64, labels ...string) *prom.HistogramVec {
		return prom.NewHistogramVec(prom.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	counter := func(name, help string, labels ...string) *prom.CounterVec {
		return prom.NewCounterVec(prom.CounterOpts{Name: name, Help: help}, labels)
	}
	m.wait = hist("zkrecipes_lock_wait_duration_seconds", "Time an Acquire or TryAcquire waited, by outcome.", lockBuckets, "recipe", "path", "outcome")
	m.hold = hist("zkrecipes_lock_hold_duration_seconds", "Time a grant was held, from the grant to its release.", lockBuckets, "recipe", "path")
	m.term = hist("zkrecipes_leader_term_duration_seconds", "Length of a leader term (Run's function).", lockBuckets, "path")
	m.request = hist("zkrecipes_request_duration_seconds", "Latency of a request to ZooKeeper, every attempt.", prom.DefBuckets, "op", "outcome")
	m.handoffs = counter("zkrecipes_lock_handoffs_total", "Grants passed to a local waiter of the same session.", "recipe", "path")
	m.lost = counter("zkrecipes_lock_lost_total", "Held leases found lost, by cause.", "recipe", "path", "cause")
	m.revokes = counter("zkrecipes_lock_revoke_requests_total", "Revoke requests seen on held nodes.", "recipe", "path")
	m.terms = counter("zkrecipes_leader_terms_total", "Leader terms begun.", "path")
	m.transitions = counter("zkrecipes_session_transitions_total", "Session state transitions, by new state.", "state")
	m.leading = prom.NewGaugeVec(prom.GaugeOpts{Name: "zkrecipes_leader_leading", Help: "1 while this process leads the election, else 0."}, []string{"path"})
	m.epochs = prom.NewCounter(prom.CounterOpts{Name: "zkrecipes_session_epochs_total", Help: "ZooKeeper sessions (epochs) begun."})
	m.watches = prom.NewGauge(prom.GaugeOpts{Name: "zkrecipes_session_watches", Help: "Watches the sessions have on the servers for their callers."})
	for _, col := range []prom.Collector{m.wait, m.hold, m.term, m.request, m.handoffs, m.lost, m.revokes, m.terms, m.transitions, m.leading, m.epochs, m.watches} {
		if err := reg.Register(col); err != nil {
			return metrics.Hooks{}, err
		}
	}
	return metrics.Hooks{State: m.onState, Request: m.onRequest, Lock: m.onLock, Leader: m.onLeader, Watches: m.onWatches}, nil
}

func (m *recorder) onState(t metrics.Transition) {
	m.transitions.WithLabelValues(t.State).Inc()
	if t.State == conn.Connected.String() {
		m.epochs.Inc()
	}
}

func (m *recorder) onRequest(r metrics.Request) {
	outcome := "ok"
	if r.Err != nil {
		outcome = "error"
	}
	m.request.WithLabelValues(r.Op, outcome).Observe(r.Duration.Seconds())
}

func (m *recorder) onLock(l metrics.Lock) {
	path := m.label(l.Recipe, l.Path)
	switch l.Event {
	case metrics.LockWait:
		m.wait.WithLabelValues(l.Recipe, path, l.Outcome).Observe(l.Duration.Seconds())
	case metrics.LockHold:
		m.hold.WithLabelValues(l.Recipe, path).Observe(l.Duration.Seconds())
	case metrics.LockHandoff:
		m.handoffs.WithLabelValues(l.Recipe, path).Inc()
	case metrics.LockLost:
		m.lost.WithLabelValues(l.Recipe, path, l.Cause).Inc()
	case metrics.LockRevokeRequest:
		m.revokes.WithLabelValues(l.Recipe, path).Inc()
	}
}

func (m *recorder) onLeader(l metrics.Leader) {
	path := m.label("leader", l.Path)
	if l.Leading {
		m.terms.WithLabelValues(path).Inc()
		m.leading.WithLabelValues(path).Set(1)
		return
	}
	m.leading.WithLabelValues(path).Set(0)
	m.term.WithLabelValues(path).Observe(l.Duration.Seconds())
}

func (m *recorder) onWatches(delta int) { m.watches.Add(float64(delta)) }
