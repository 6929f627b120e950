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
//     (errors.Is), the waiter's node is gone before Acquire returns, and the
//     handle acquires normally afterwards.
//   - Holder's session expired by the server: the holder's lease is Lost, a
//     waiter acquires, and the old holder's GuardedWrite fails with
//     conn.ErrLeaseLost.
//   - A server restart while a waiter is queued and while a holder holds, and
//     a leader kill in a three-server ensemble: nothing hangs, never two
//     holders.
//
// MeasureHerd measures the ZooKeeper requests and watch events per acquire
// while N waiters drain, for the herd-effect comparison between the naive
// lock (package exclusive) and the sequential recipes.
//
// This package is for the module's own tests; it is internal so that users
// do not depend on it.
package locktest
