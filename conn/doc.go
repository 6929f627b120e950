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
//   - Close is idempotent, returns promptly even when no server answers,
//     never hangs (it waits at most about 10 s for go-zookeeper's
//     goroutines), and leaves no goroutine behind unless a dialer's Write
//     never returns: those are left behind, logged at Error
//     (TestCloseIsBoundedWhenGoZookeeperIsStuck).
//   - A watch nobody waits on any more is removed from the server. The
//     recipes tell the epoch when a waiter gives up (an internal hook);
//     when no other watcher of the session waits on that path and kind
//     (data: GetW, ExistsW; child: ChildrenW), and the watch has not
//     fired, the server's watch is removed with removeWatches (ZooKeeper
//     3.5 and later), which go-zookeeper v1.0.4 cannot send, and it does
//     not come back on a reconnect. See "What conn adds on the wire".
//
// # What it does not guarantee
//
// A Lease (a held lock node) is a lease on a session, not a promise: between
// the moment the server expires a session and the moment the client learns
// it, the client may still believe it holds a lock, and another client may
// already hold it. The local timer bounds that window only from the last
// byte the client heard, and a server can keep talking to a client whose
// session the ensemble has expired: a follower cut off from the leader
// answers its clients' pings until it notices, syncLimit × tickTime after
// the leader's last packet, while the leader's side expires the session one
// session timeout after the follower stopped passing its pings on. The
// client then hears nothing wrong for about syncLimit × tickTime after its
// session ended, and its local timer fires one session timeout after the
// follower stopped answering. Measured by
// TestFollowerCutOffFromQuorumKeepsAnsweringPings (tickTime 500 ms,
// syncLimit 5, session timeout 1 s, the other two servers frozen): pings
// answered for 2.5 s, Lost by the local timer 3.3–3.4 s after the freeze (3 runs). With
// ZooKeeper's sample configuration (tickTime 2 s, syncLimit 5) the follower
// answers for up to 10 s. Only the resource can close the window: fencing
// tokens (Lease.Fence) and guarded writes (Lease.GuardedWrite), which the
// ensemble refuses once the session is gone, whatever the client believes.
//
// # go-zookeeper's data races
//
// go-zookeeper v1.0.4 has two data races this package triggers: on a
// reconnect with watches set, its reader writes the last zxid while its
// connect loop reads it for the set-watches request (which can also lose a
// watch event); and on Close, CreateContainer reads its response while the
// reader may still decode a late answer into it. The session manager owns
// the dialer and so the wire: it keeps the last zxid itself, and hands the
// reader no late answer once a close has begun, so neither race can happen
// (wireConn and link.beginClose in wire.go say how; the tests reproduce
// both without it). The whole test suite runs under the race detector.
//
// It also has a hang this package avoids: a failed write answers a request
// twice, and after a reconnect (its credentials re-sent on channels of
// capacity 1) that blocks its loop forever; the zk.Conn never reconnects.
// The wire reports no write error and drops the connection instead
// (writeFailConn; TestCredentialsResendWriteFailureKeepsSession).
//
// # One go-zookeeper version
//
// The wire layer (wire.go, watches.go) depends on go-zookeeper v1.0.4's
// internals, which no other version promises to keep, and a program's
// module graph may select another (minimal version selection takes the
// highest any module requires). So Connect refuses any other: when the
// program's build information (runtime/debug.ReadBuildInfo) records another
// version of github.com/go-zookeeper/zk, or a replacement (a fork, a
// directory) other than v1.0.4 itself, Connect returns ErrZKVersion, naming
// what is linked, before it dials. Test binaries record no dependencies, so
// there the check passes; TestZKVersionPinned fails instead when go.mod
// requires, or the build selects, another version
// (TestConnectRefusesOtherZK builds a program that links a directory copy).
//
// # What conn adds on the wire
//
// The session manager owns the dialer, so every byte between go-zookeeper
// and the server passes through it (wire.go, watches.go). It reads whole
// frames and: keeps the last zxid itself (above); hands the reader no late
// answer once a close has begun (above); writes removeWatches requests of
// its own, each as one frame between go-zookeeper's own writes (which are
// one Write each) with an xid go-zookeeper never uses, takes their answers
// off the wire before go-zookeeper's reader sees them, and writes them
// before any later request of go-zookeeper's, so a watch set again later
// is not removed; and rewrites go-zookeeper's set-watches requests after a
// reconnect without the paths no watcher of ours waits on (go-zookeeper
// still records a removed watch, until another watch on the path fires or
// the epoch's zk.Conn is closed when the epoch ends). Tests:
// TestUnwatchRemovesServerWatch, TestUnwatchSharedAndReconnect.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrClosed, ErrEpochEnded (with the
// reason: ErrSessionExpired, ErrSessionTimeout, ErrClosed), ErrConnectionLoss
// (a request's fate is unknown), ErrInvalidPath, ErrReservedPath,
// ErrInvalidOption, ErrNoServers, ErrConnectTimeout, ErrLeaseLost, ErrZKVersion. The errors every lock
// shares (ErrNotHeld, ErrReleasePending, ...) are package lock's. Errors from the server are
// wrapped and match go-zookeeper's (zk.ErrNoNode, ...).
package conn
