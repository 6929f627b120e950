// Package locktest is the contract suite every lock of this module passes:
// one set of tests, run by Run against any lock type over a real ZooKeeper
// (zktest), each test on a fresh path and each contender on its own session.
//
// What a lock must do to pass:
//
//   - Mutual exclusion: many contenders, each on its own session, over many
//     rounds, are never two inside at once. Checked three ways: an in-process
//     counter, an ephemeral guard node <path>-guard/holder that each holder
//     creates (a NodeExists from another session is a violation, judged by
//     the server), and the history of [acquired, releasing] intervals,
//     checked for overlap.
//   - FIFO (with WithFIFO(true)): contenders that queued one after another
//     are granted in that order.
//   - TryAcquire by many at once: exactly one wins, the losers leave no node,
//     and after the release no ephemeral node is left under the path.
//   - Timeout and cancel while queued: the error matches the context's
//     (errors.Is), the waiter's node is gone before Acquire returns, it
//     holds nothing, and the handle acquires normally afterwards.
//   - Holder's session expired by the server: the holder's lease is Lost, a
//     waiter acquires, the old holder's GuardedWrite fails with
//     conn.ErrLeaseLost (and so does re-entering it, for a reentrant lock),
//     and its Release returns nil.
//   - A server restart while a waiter is queued and while a holder holds, and
//     a leader kill in a three-server ensemble: nothing hangs, never two
//     holders.
//
// RunFaults is the second suite, the faults every sequential recipe
// survives, with its session through a zktest.Proxy where the fault is the
// network's:
//
//   - The answer to our create lost with the connection (also while another
//     holds, and a cut that catches the create or the listing after it): the
//     lock finds its node again, leaves no orphan and does not queue behind
//     its own node.
//   - ctx ending while the create is on the wire: the node is gone when
//     Acquire returns.
//   - A release whose delete cannot be confirmed: the lock's release-pending
//     error, the handle holds nothing, the node goes once the connection is
//     back, in the same session.
//   - A waiter's session expired: it queues again in the next session and
//     acquires there.
//   - The lock path reaped between acquires, and a closed session.
//
// Node counts are of ephemeral nodes under the lock's path, and the node a
// lock holds is its lease's Path, so that both suites hold for any layout.
// What differs between locks is said by options: WithReentrant,
// WithFindByData, and WithRival for a lock that shares with its
// own kind (a read lock), which then runs the contract's queued tests in
// RunFaults with the rival as the other party.
//
// MeasureHerd measures the ZooKeeper requests and watch events per acquire
// while N waiters drain, for the herd-effect comparison between the naive
// lock (package exclusive) and the sequential recipes.
//
// This package is for the module's own tests; it is internal so that users
// do not depend on it.
package locktest
