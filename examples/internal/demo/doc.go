// Package demo is what the example commands share: their flags and -h
// usage (Flags: -v and the environment variables, Environment), where
// their ZooKeeper comes from (Start: -servers, ZK_SERVERS, or one started
// with zktest; its first line says which), the main that runs an example's
// run(ctx, servers, out) and exits non-zero on error, the tests every
// example runs (RunTests, TestHelp, TestRun), and the worker that owns one
// session, one lock handle and one goroutine for its lock calls.
package demo
