// Package metrics is what a session and the recipes on it report, for a
// service to export: a Hooks given to conn.WithMetrics. The adapters are
// modules of their own, so that the library needs no metrics dependency:
// github.com/zkrecipes/zkrecipes/metrics/prometheus and
// github.com/zkrecipes/zkrecipes/metrics/otel.
//
// The hooks are called synchronously, from the goroutine of the event (a
// request, an Acquire, a Release, the session manager), and concurrently:
// they must be quick, must not block and must not call back into the
// session. Durations are time.Duration (the adapters export seconds).
// Paths are passed as they are (without namespace): an adapter bounds the
// label values it makes of them.
package metrics
