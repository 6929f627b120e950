// Package otel records what a zkrecipes session and its recipes report
// (package metrics) through an OpenTelemetry metric.Meter. It is a module of
// its own, so that the library needs no OpenTelemetry dependency:
//
//	hooks, err := otel.New(provider.Meter("zkrecipes"))
//	sess, err := conn.Connect(ctx, servers, conn.WithMetrics(hooks))
//
// The instruments (durations in seconds, "s"), with their attributes:
//
//	zkrecipes.lock.wait.duration      histogram      recipe, path, outcome
//	zkrecipes.lock.hold.duration      histogram      recipe, path
//	zkrecipes.lock.handoffs           counter        recipe, path
//	zkrecipes.lock.lost               counter        recipe, path, cause
//	zkrecipes.lock.revoke_requests    counter        recipe, path
//	zkrecipes.leader.terms            counter        path
//	zkrecipes.leader.leading          updowncounter  path (1 while leading)
//	zkrecipes.leader.term.duration    histogram      path
//	zkrecipes.session.transitions     counter        state
//	zkrecipes.session.epochs          counter
//	zkrecipes.session.watches         updowncounter
//	zkrecipes.request.duration        histogram      op, outcome
//
// The attribute values are package metrics', as in package
// github.com/zkrecipes/zkrecipes/metrics/prometheus (which lists them).
//
// The path attribute is what WithPathLabel's function makes of the lock
// path: by default "" for every lock, so that a service with one lock per
// order does not make one series per order. Give PathAsIs, or a function
// that maps the paths to a bounded set, to tell the locks apart.
package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// Option configures New.
type Option func(*config)

type config struct {
	label func(recipe, path string) string
}

// WithPathLabel sets the function that makes the path attribute of a lock
// or election from its recipe and path (default: "" for all). It must
// return few distinct values: each is a series of every lock instrument.
func WithPathLabel(f func(recipe, path string) string) Option {
	return func(c *config) { c.label = f }
}

// PathAsIs is a path label function that keeps the path: for services
// whose lock paths are a small fixed set.
func PathAsIs(_, path string) string { return path }

// recorder records through OpenTelemetry instruments; its methods are the
// hooks.
type recorder struct {
	label func(recipe, path string) string

	wait, hold, term, request               metric.Float64Histogram
	handoffs, lost, revokes, terms, changes metric.Int64Counter
	epochs                                  metric.Int64Counter
	leading, watches                        metric.Int64UpDownCounter
}

// lockBuckets are the bounds of the wait, hold and term histograms, in
// seconds: a handoff takes about a millisecond, a contended wait seconds.
var lockBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// New returns hooks, for conn.WithMetrics, that record through instruments
// from meter. Safe for concurrent use; the hooks may serve many sessions.
func New(meter metric.Meter, opts ...Option) (metrics.Hooks, error) {
	if meter == nil {
		return metrics.Hooks{}, errors.New("zkrecipes otel: nil meter")
	}
	c := config{label: func(string, string) string { return "" }}
	for _, o := range opts {
		o(&c)
	}
	if c.label == nil {
		return metrics.Hooks{}, errors.New("zkrecipes otel: nil path label function")
	}
	m := &recorder{label: c.label}
	var errs []error
	hist := func(name, desc string, buckets []float64) metric.Float64Histogram {
		o := []metric.Float64HistogramOption{metric.WithUnit("s"), metric.WithDescription(desc)}
		if buckets != nil {
			o = append(o, metric.WithExplicitBucketBoundaries(buckets...))
		}
		h, err := meter.Float64Histogram(name, o...)
		errs = append(errs, err)
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	m.wait = hist("zkrecipes.lock.wait.duration", "Time an Acquire or TryAcquire waited, by outcome.", lockBuckets)
	m.hold = hist("zkrecipes.lock.hold.duration", "Time a grant was held, from the grant to its release.", lockBuckets)
	m.term = hist("zkrecipes.leader.term.duration", "Length of a leader term (Run's function).", lockBuckets)
	m.request = hist("zkrecipes.request.duration", "Latency of a request to ZooKeeper, every attempt.", nil)
	m.handoffs = counter("zkrecipes.lock.handoffs", "{handoff}", "Grants passed to a local waiter of the same session.")
	m.lost = counter("zkrecipes.lock.lost", "{lease}", "Held leases found lost, by cause.")
	m.revokes = counter("zkrecipes.lock.revoke_requests", "{request}", "Revoke requests seen on held nodes.")
	m.terms = counter("zkrecipes.leader.terms", "{term}", "Leader terms begun.")
	m.changes = counter("zkrecipes.session.transitions", "{transition}", "Session state transitions, by new state.")
	m.epochs = counter("zkrecipes.session.epochs", "{session}", "ZooKeeper sessions (epochs) begun.")
	var err error
	m.leading, err = meter.Int64UpDownCounter("zkrecipes.leader.leading", metric.WithUnit("{leader}"),
		metric.WithDescription("1 while this process leads the election, else 0."))
	errs = append(errs, err)
	m.watches, err = meter.Int64UpDownCounter("zkrecipes.session.watches", metric.WithUnit("{watch}"),
		metric.WithDescription("Watches the sessions have on the servers for their callers."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return metrics.Hooks{}, err
	}
	return metrics.Hooks{State: m.onState, Request: m.onRequest, Lock: m.onLock, Leader: m.onLeader, Watches: m.onWatches}, nil
}

func (m *recorder) onState(t metrics.Transition) {
	ctx := context.Background()
	m.changes.Add(ctx, 1, metric.WithAttributes(attribute.String("state", t.State)))
	if t.State == conn.Connected.String() {
		m.epochs.Add(ctx, 1)
	}
}

func (m *recorder) onRequest(r metrics.Request) {
	outcome := "ok"
	if r.Err != nil {
		outcome = "error"
	}
	m.request.Record(context.Background(), r.Duration.Seconds(),
		metric.WithAttributes(attribute.String("op", r.Op), attribute.String("outcome", outcome)))
}

func (m *recorder) onLock(l metrics.Lock) {
	ctx := context.Background()
	recipe, path := attribute.String("recipe", l.Recipe), attribute.String("path", m.label(l.Recipe, l.Path))
	switch l.Event {
	case metrics.LockWait:
		m.wait.Record(ctx, l.Duration.Seconds(), metric.WithAttributes(recipe, path, attribute.String("outcome", l.Outcome)))
	case metrics.LockHold:
		m.hold.Record(ctx, l.Duration.Seconds(), metric.WithAttributes(recipe, path))
	case metrics.LockHandoff:
		m.handoffs.Add(ctx, 1, metric.WithAttributes(recipe, path))
	case metrics.LockLost:
		m.lost.Add(ctx, 1, metric.WithAttributes(recipe, path, attribute.String("cause", l.Cause)))
	case metrics.LockRevokeRequest:
		m.revokes.Add(ctx, 1, metric.WithAttributes(recipe, path))
	}
}

func (m *recorder) onLeader(l metrics.Leader) {
	ctx := context.Background()
	path := metric.WithAttributes(attribute.String("path", m.label("leader", l.Path)))
	if l.Leading {
		m.terms.Add(ctx, 1, path)
		m.leading.Add(ctx, 1, path)
		return
	}
	m.leading.Add(ctx, -1, path)
	m.term.Record(ctx, l.Duration.Seconds(), path)
}

func (m *recorder) onWatches(delta int) { m.watches.Add(context.Background(), int64(delta)) }
