// Package conn is the session every recipe stands on: one Session per
// process over github.com/go-zookeeper/zk, that reconnects and tells its
// holders when what they hold is lost.
//
// A Session lives across many ZooKeeper sessions, its epochs. An epoch
// ends exactly once: the server confirmed expiry (ErrSessionExpired), the
// local timer ran out (ErrSessionTimeout), or Close (ErrClosed). A request
// runs in one epoch and is never sent again in the next. Subscribe gives
// every transition in order. The local timer ends an epoch before the
// leader can expire its session (WithLastHeardTimer; docs/safety.md).
//
// A Lease (a held lock node) is a lease on a session, not a promise: a
// process paused longer than the margin may still believe it holds. Only
// the resource can close that window: Lease.Fence gives a fencing token
// and Lease.GuardedWrite a write the ensemble refuses once the lock is gone.
//
// conn runs go-zookeeper v1.0.4 only (see WithPatchedZK). Errors are
// compared with errors.Is; those every lock shares are package lock's, and
// server errors match go-zookeeper's (zk.ErrNoNode, ...).
package conn
