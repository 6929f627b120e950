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
//     (sealed; see WithACL). A server that refuses credentials is not
//     stormed with new sessions: the next attempt waits 250 ms doubling up
//     to 30 s (with jitter), and the refusal is reported (ErrAuthFailed in
//     Connect's and Epoch's errors; TestAuthRefusedBacksOff).
//   - Close is idempotent and never hangs: it returns at once when the
//     server answers or the connection is down, after about a second when
//     nothing answers on a live connection, and within about 10 s (13 s at
//     worst) when go-zookeeper's goroutines are stuck; it leaves no
//     goroutine behind unless a dialer's Write never returns: those are
//     left behind, logged at Error (TestCloseDurations,
//     TestCloseIsBoundedWhenGoZookeeperIsStuck).
//   - A watch nobody waits on any more is removed from the server. The
//     recipes tell the epoch when a waiter gives up (an internal hook);
//     when no other watcher of the session waits on that path and kind
//     (data: GetW, ExistsW; child: ChildrenW), and the watch has not
//     fired, the server's watch is removed with removeWatches (ZooKeeper
//     3.5 and later), which go-zookeeper v1.0.4 cannot send, and it does
//     not come back on a reconnect. See "What conn adds on the wire".
//
// # The local timer
//
// Only the ensemble's leader expires sessions, no earlier than one session
// timeout T after it last heard of the session (rounded up to a tick); the
// client must stop acting on its session (its leases, its leader terms)
// before that, without being told.
//
// The quorum timer (the default; WithLastHeardTimer opts out) sends a sync
// every T/12 while an epoch lives, without waiting for the last one's
// answer, and ends the epoch 7T/12 after the last proof p that the leader
// had heard of the session, connected or not. A proof is the send time of
// a sync answered (a sync is answered only after the leader has processed
// it), or the write time of a reconnect's connect request, which a server
// answers only after the leader renewed the session. A new epoch is
// handed out only once a first sync, sent after its session was
// established, is answered: a connect request that waited on a frozen
// server does not start its clock (TestServerFreezeCostsOneSession). So
// the epoch ends, at the latest:
//
//   - on a standalone server, or connected to the leader, 5T/12 before the
//     server can expire the session (it heard of it after p);
//   - connected to a follower, T/3 − tickTime/2 before the leader can: the
//     leader hears of a session's requests from the follower's replies to
//     its pings, every tickTime/2, and the client sent a sync at least
//     every T/12, so the leader's record is no older than p − T/12 −
//     tickTime/2. A session timeout is at least two ticks, so that is at
//     least T/12 whatever tickTime; with tickTime 500 ms and T = 3 s, 750 ms.
//
// Both margins shrink by the client's own scheduling delays. Measured under
// a blackhole (TestQuorumTimerMarginUnderBlackhole, T = 3 s, tickTime
// 500 ms, the server's expiry seen as the deletion of an ephemeral node by
// another session): see docs/safety.md. A follower cut off from the leader
// goes on answering pings for syncLimit × tickTime, but not syncs: the
// epoch ends all the same (TestFollowerCutOffFromQuorumKeepsAnsweringPings:
// T = 1 s, Lost within 7T/12 of the freeze, while the follower still
// answered).
//
// The window it leaves: a connection cut and back (detection, redial and
// the reconnect's answer included) within T/2 of the cut keeps the epoch;
// the last sync answered may have been sent T/12 before the cut. The first
// redial after a connection that worked is made at once, unless the server
// closed it (go-zookeeper otherwise waits a second before each round of
// the server list). Measured (TestQuorumTimerKeepsSessionThroughABlip,
// T = 4 s, the answer of a sync lost, the connection reset 1.9 s later):
// Reconnected 4–63 ms after the reset, standalone and through a follower;
// a 2 s cut ends the epoch.
//
// The cost: the syncs, 12/T requests per second per session (1.2/s at the
// default 10 s; counted in Stats.QuorumSyncs, not in Stats.Requests), and
// an epoch that also ends while the connection is up when no sync sent in
// the last 7T/12 is answered: a leader election or a leader that stalls
// for longer than about T/2, or a link whose round trip exceeds about T/2
// (TestQuorumTimerEndsEpochOnASlowLink: T = 4 s, a 500 ms delay each way
// on every chunk, the syncs queued behind each other: Lost 4.6 s later).
//
// WithLastHeardTimer() keeps the earlier timer: no syncs, and the epoch
// ends T after the last byte heard from the connected server, counted only
// while disconnected. It never gives up a session the server kept, but its
// margin is whatever the server's tick rounding leaves (0.31–0.50 s under a
// blackhole, T = 3 s), and a follower cut off from
// the leader keeps it from starting: the client hears nothing wrong for
// about syncLimit × tickTime after the leader's side expired its session,
// and its timer fires one session timeout after the follower stopped
// answering (T = 1 s: pings answered for 2.5 s, Lost 3.3–3.4 s after the
// freeze; with ZooKeeper's sample configuration, tickTime 2 s and syncLimit
// 5, the follower answers for up to 10 s).
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
// # Metrics
//
// WithMetrics gives the session a Metrics, to which it and the recipes on
// it report what they do (default: none; every report point is then one
// nil check). The library has no metrics dependency: the adapters are
// modules of their own, github.com/zkrecipes/zkrecipes/metrics/prometheus
// and github.com/zkrecipes/zkrecipes/metrics/otel, and docs/operations.md
// lists what they export and what to alert on. Durations are
// time.Duration; the adapters export seconds. The events:
//
//   - State: every state transition (Event); each Connected is a new
//     epoch.
//   - Request: each request attempt to ZooKeeper (the Op* names), with its
//     latency and error.
//   - Lock, LockWait: an Acquire or TryAcquire ended after Duration, with
//     Outcome granted, not_granted, timeout, cancelled or error; one per
//     call that asks for the lock, every recipe's (a local waiter's wait
//     included; a re-entrant call of the goroutine that holds a mutex or
//     rwlock asks for nothing and is not reported).
//   - Lock, LockHold: a grant released by its recipe, held for Duration
//     since the grant (a recipe's own delete seen by the lease's watch
//     first is still a hold).
//   - Lock, LockHandoff: a grant passed to a local waiter (in-process
//     handoff).
//   - Lock, LockLost: a lease lost, with Cause expiry, local_timer,
//     node_deleted, suspended, closed or other; reported when the lease
//     learns it (something waits on Lost or checks it), once.
//   - Lock, LockRevokeRequest: a revoke request seen on a held node.
//   - Leader: a term of leader.Election.Run began (Leading) or ended
//     (with its Duration).
//   - Watches: the number of watches the session has on the servers for
//     its callers rose or fell by one.
//
// Paths are passed as they are; the adapters bound the label values they
// make of them. Tests: TestMetricsWaitsAndHolds, TestMetricsLocalHandoff,
// TestMetricsLostOnExpiry, TestMetricsLostOnLocalTimer (the server paused),
// TestMetricsLostOnSuspended (a cut connection), TestMetricsRevokeAndDeleted,
// TestMetricsWatches (package mutex),
// TestMetricsTerm (leader), TestMetricsHold and TestMetricsWaits (exclusive),
// TestMetricsSemaphore and TestMetricsMutex (semaphoremutex), and the
// adapters' own against a real ZooKeeper; BenchmarkMetrics (mutex)
// compares no Metrics with one that does nothing.
//
// # Errors
//
// Sentinels, compared with errors.Is: ErrClosed, ErrEpochEnded (with the
// reason: ErrSessionExpired, ErrSessionTimeout, ErrClosed), ErrConnectionLoss
// (a request's fate is unknown), ErrInvalidPath, ErrReservedPath,
// ErrInvalidOption, ErrNoServers, ErrConnectTimeout, ErrAuthFailed, ErrLeaseLost, ErrZKVersion. The errors every lock
// shares (ErrNotHeld, ErrReleasePending, ...) are package lock's. Errors from the server are
// wrapped and match go-zookeeper's (zk.ErrNoNode, ...).
package conn
