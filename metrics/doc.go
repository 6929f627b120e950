// Package metrics is what a session and the recipes on it report, for a
// service to export: a Hooks given to conn.WithMetrics. The adapters are
// modules of their own, so that the library needs no metrics dependency:
// github.com/zkrecipes/zkrecipes/metrics/prometheus and
// github.com/zkrecipes/zkrecipes/metrics/otel.
//
// The hooks are called synchronously and concurrently, from the goroutine
// of the event: they must be quick, must not block and must not call back
// into the session. Paths are passed without namespace; an adapter bounds
// the label values it makes of them. See docs/operations.md, "Metrics".
package metrics
