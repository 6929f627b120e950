// Package conn is the session manager every recipe stands on: one Session
// per process (or per logical client) over github.com/go-zookeeper/zk.
//
// # Sessions and epochs
//
// A Session survives many ZooKeeper sessions. Each one is an Epoch: it
// begins when the server grants a session and ends exactly once, when the
// server confirms expiry (ErrSessionExpired), when the local timer runs out
// (ErrSessionTimeout: during a partition the server cannot tell us; see
// "The local timer"), or on Close (ErrClosed). Its end is a closed
// channel (Epoch.Done), with the reason in Epoch.Err. A new epoch
// then begins on a fresh connection, so nothing sent in one ZooKeeper session
// can be carried out in the next.
//
// Transitions, with Curator's names: Connected (an epoch began), Suspended
// (connection broke; the session may live), Reconnected (same session back),
// Lost (the epoch ended), Closed. Subscribe gives every transition in order,
// never dropping one, however slowly it is read.
//
// # What it guarantees
//
//   - Each request (Session.Get, Set, Create, Delete, Children, Exists, and
//     the recipes' own) runs in one epoch, on its connection only, takes a
//     context first, and fails with ErrEpochEnded once the epoch has ended;
//     it is never sent again in the next.
//   - Idempotent operations are retried on connection loss with exponential
//     backoff and jitter (WithRetry), bounded by the caller's context and
//     the epoch. Sequential creates and multis are never retried blindly.
//   - Paths are validated (ErrInvalidArgument) and prefixed with the
//     namespace.
//   - Requests and watch events are counted (the module's tests and
//     benchmarks read the counts).
//   - Each Session has a random digest identity of its own, added to every
//     ZooKeeper session before it is handed out, so that the recipes can
//     create lock nodes only that session may change (sealed; see WithACL).
//     A server that refuses the credentials is retried after 250 ms,
//     doubling up to 30 s, and the refusal is reported (ErrAuthFailed).
//   - Close is idempotent and never hangs: it returns at once when the
//     server answers or the connection is down, after about a second when
//     nothing answers, and within about 13 s at worst.
//   - A watch nobody waits on any more is removed from the server
//     (ZooKeeper 3.5 and later), and does not come back on a reconnect.
//
// # The local timer
//
// Only the ensemble's leader expires sessions, no earlier than one session
// timeout T after it last heard of the session; the client must stop
// acting on its session (its leases, its leader terms) before that,
// without being told.
//
// The quorum timer (the default) sends a sync every T/12 while an epoch
// lives and ends the epoch 7T/12 after the last proof that the leader heard
// of the session: the send time of an answered sync, or of a reconnect's
// answered connect request. A new epoch starts its clock at a first sync
// sent once its session is established. So the epoch ends at least 5T/12
// before the server can expire the session on a standalone server or
// through the leader, and T/3 − tickTime/2 (at least T/12) through a
// follower, less the client's own scheduling delays. A connection cut and
// back within T/2 (detection, redial and answer included) keeps the epoch;
// the first redial after a working connection is made at once. The cost:
// 12/T syncs per second per session, and an epoch that also ends when no
// sync is answered for about T/2 on a live connection (a leader election,
// a slow link). docs/safety.md has the measured figures, docs/design.md the
// argument.
//
// WithLastHeardTimer() keeps the earlier timer: no syncs, and the epoch
// ends T after the last byte heard from the connected server, counted only
// while disconnected. It never gives up a session the server kept, but its
// margin is whatever the server's tick rounding leaves, and a follower cut
// off from the leader keeps it from starting for up to syncLimit ×
// tickTime.
//
// # What it does not guarantee
//
// A Lease (a held lock node) is a lease on a session, not a promise: a
// client whose process is paused (GC, SIGSTOP) or whose clock runs slow
// for longer than the margins above, or one that runs with
// WithLastHeardTimer(), may still believe it holds a lock while another
// client holds it; and Lost and Done are signals, which code that checks
// them and then acts may act on late. Only the resource can close that
// window: fencing tokens (Lease.Fence) and guarded writes
// (Lease.GuardedWrite), which the ensemble refuses once the session is
// gone, whatever the client believes.
//
// # One go-zookeeper version
//
// conn works with github.com/go-zookeeper/zk v1.0.4 only: it owns the
// connection's wire and depends on that version's frames. Connect returns
// ErrZKVersion, naming what is linked, when the program's build records
// another version or a replacement; pin v1.0.4 in go.mod. A patched copy of
// v1.0.4 (a replace) runs with WithPatchedZK; CheckWire, run in a test
// against a real server, tells whether the copy keeps what conn relies on.
// docs/design.md ("The wire") says what conn does on the wire and why.
//
// # Metrics
//
// WithMetrics gives the session a metrics.Hooks, a struct of functions to
// which it and the recipes on it report what they do (default: none; a nil
// hook costs one nil check). Package metrics says what each reports and
// when: state transitions, request attempts, lock waits, holds, handoffs,
// losses and revoke requests, leader terms, and the count of server
// watches. The library has no metrics dependency: the adapters are modules
// of their own, github.com/zkrecipes/zkrecipes/metrics/prometheus and
// github.com/zkrecipes/zkrecipes/metrics/otel, and docs/operations.md lists
// what they export and what to alert on.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrClosed, ErrEpochEnded (with the
// reason: ErrSessionExpired, ErrSessionTimeout, ErrClosed), ErrConnectionLoss
// (a request's fate is unknown), ErrInvalidArgument (bad input: a path,
// an option, a nil value; every package's), ErrConnectTimeout,
// ErrAuthFailed, ErrLeaseLost, ErrZKVersion. The errors every lock shares
// (ErrNotHeld, ErrReleasePending, ...) are package lock's. Errors from the server are
// wrapped and match go-zookeeper's (zk.ErrNoNode, ...).
package conn
