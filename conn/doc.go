// Package conn is the session manager every recipe stands on: one Session
// per process (or per logical client) over github.com/go-zookeeper/zk.
//
// # Sessions and epochs
//
// A Session survives many ZooKeeper sessions. Each one is an Epoch: it
// begins when the server grants a session and ends exactly once, when the
// server confirms expiry (ErrSessionExpired), when the client has been cut
// off for the negotiated session timeout counted from the last byte it heard
// from the server (ErrSessionTimeout, the local timer: during a partition the
// server cannot tell us), or on Close (ErrClosed). Its end is a closed
// channel (Epoch.Done) and a cancelled context (Epoch.Context). A new epoch
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
//   - Operations on an Epoch run on that epoch's connection only, take a
//     context first, and fail with ErrEpochEnded once the epoch has ended.
//   - Idempotent operations are retried on connection loss with exponential
//     backoff and jitter (RetryPolicy), bounded by the caller's context and
//     the epoch. Sequential creates and multis are never retried blindly.
//   - Paths are validated (ValidatePath) and prefixed with the namespace.
//   - Requests and watch events are counted (Stats).
//   - Each Session has a random digest identity of its own, added (one
//     AddAuth) to every ZooKeeper session before it is handed out, so that
//     the recipes can create lock nodes only that session may change
//     (sealed; see WithACL).
//   - Close is idempotent, returns promptly even when no server answers, and
//     leaves no goroutine behind.
//
// # What it does not guarantee
//
// A Lease (a held lock node) is a lease on a session, not a promise: between
// the moment the server expires a session and the moment the client learns
// it, the client may still believe it holds a lock. The local timer narrows
// that window to the one-way network delay; fencing tokens (Lease.Token) and
// guarded writes (Lease.GuardedWrite) close it for writes that go through
// ZooKeeper.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrClosed, ErrEpochEnded (with the
// reason: ErrSessionExpired, ErrSessionTimeout, ErrClosed), ErrConnectionLoss
// (a request's fate is unknown), ErrInvalidPath, ErrReservedPath,
// ErrInvalidOption, ErrNoServers, ErrConnectTimeout, ErrLeaseLost; and the
// roots of the recipes' errors, which this package never returns itself:
// ErrReleasePending, ErrNotHeld, ErrNotRevocable. Errors from the server are
// wrapped and match go-zookeeper's (zk.ErrNoNode, ...).
package conn
