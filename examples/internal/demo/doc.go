// Package demo is what the example commands share: where their ZooKeeper
// comes from (ZK_SERVERS, or one started with zktest), the main that runs
// an example's run(ctx, servers, out) and exits non-zero on error, the test
// that runs it against a fresh ZooKeeper, and the worker that owns one
// session, one lock handle and one goroutine for its lock calls.
package demo
