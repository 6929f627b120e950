// Package connhook lets the module's recipes reach what package conn keeps
// out of its public API. Package conn fills the variables in its init;
// they take and return conn's types as any, because conn imports this
// package and this package cannot import conn.
//
// It is internal so that users do not depend on it.
package connhook

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"
)

// SealedACL returns the ACL a recipe gives the lock nodes it seals, for a
// *conn.Session: the session's ACL (conn.WithACL) with WRITE and ADMIN
// removed from every entry, plus the session's own digest identity with
// ALL. Only that session can then change the node's data or its ACL.
var SealedACL func(sess any) []zk.ACL

// Unwatch tells a *conn.Epoch that its caller stopped waiting on ch, a
// channel the epoch's GetW, ExistsW or ChildrenW returned. If no other
// watcher of the session waits on that path and kind and the watch has
// not fired, conn removes it from the server (removeWatches) before any
// later request of the epoch, and waits for the answer bounded by ctx and
// the epoch; with ctx ended it returns at once and the removal still
// goes out. A fired or already stopped channel costs nothing.
var Unwatch func(ctx context.Context, ep any, ch <-chan zk.Event) error

// NewLease makes a *conn.Lease for node path, which the session of ep (a
// *conn.Epoch) created and holds. Recipes call it when they acquire. The
// lease learns the node's czxid from its first read of the node, which
// must find it owned by the session (see conn.Lease.Fence).
var NewLease func(ep any, path string) any

// NewLeaseAt is NewLease for a node whose czxid the recipe knows (it read
// the node and found it its own): a node at path with another czxid is
// not the lease's.
var NewLeaseAt func(ep any, path string, czxid int64) any

// Released marks l (a *conn.Lease) as no longer held: its Lost channel is
// closed and Err says released. Recipes call it when they delete the node
// (or hand its deletion to the background); it deletes nothing.
var Released func(l any)

// SessionPassword returns the password of ep's ZooKeeper session (ep is a
// *conn.Epoch), as the Java client's getSessionPasswd gives it, for
// zktest.ExpireEpoch. A secret: it lets anyone attach to the session.
var SessionPassword func(ep any) []byte

// Shared returns the map in which the recipes keep per-session state of a
// *conn.Session (the in-process handoff's cohorts, package cohort), keyed
// by what they choose. It lives as long as the session.
var Shared func(sess any) *sync.Map

// LocalLease returns a local grant on the node of a *conn.Lease, as a
// *conn.Lease of its own: same node, epoch and token, pass as its Fence's
// Pass, and its own Lost channel, closed when it is released (Released)
// or when the node's lease is lost. Its guarded writes are refused once it
// is released, whether or not the node still exists.
var LocalLease func(l any, pass int64) any

// CreateWritten returns, for a *conn.Epoch, a channel closed once the next
// create request written on the epoch's connection (after the call) has
// gone to the server; never closed if none is. A request sent after that
// is answered after the create (ZooKeeper answers a session's requests in
// order): the engine sends its listing right behind its create.
var CreateWritten func(ep any) <-chan struct{}

// EpochContext returns, for a *conn.Epoch, the context cancelled (with the
// reason as cause) when the epoch ends: the context the engine's
// background work on that epoch runs on.
var EpochContext func(ep any) context.Context

// Closing returns a channel closed when Close is called on a
// *conn.Session: local waiters (package cohort) give up then, as requests
// on the session fail with conn.ErrClosed.
var Closing func(sess any) <-chan struct{}

// HoldWrites, for a *conn.Lease, waits until no guarded write through it
// is in flight and keeps new ones waiting until the returned function is
// called; they then see the lease released, or go on if it was not. Package
// cohort holds it while it releases a local grant, so that a grant's write
// is answered before the next grant on the node exists.
var HoldWrites func(l any) (done func())

// RevokeSeen reports, for a *conn.Lease, whether a revoke request has been
// seen on its node (its Revoked channel is closed), without starting the
// node watch that Revoked starts.
var RevokeSeen func(l any) bool

// GetACL reads the ACL and stat of node path through a *conn.Epoch, as
// the epoch's other reads do (counted as conn.OpGetACL, retried on
// connection loss). The queue's waiters read their predecessor's ACL with
// its data, to tell whether a data change of it can be trusted as its
// release.
var GetACL func(ctx context.Context, ep any, path string) ([]zk.ACL, *zk.Stat, error)

// Guard makes a *conn.Lease just granted, not handed out yet, a grant that
// stands on node, another node of the same session that exists and whose
// czxid is zxid: its guarded writes and CheckOp check node instead of its
// own, node's deletion makes it lost (once watched), and its Fence is
// {zxid, pass}. rwlock's downgrade: a read grant that stands on the
// goroutine's write node.
var Guard func(l any, node string, zxid, pass int64)

// Unguard hands a grant made by Guard to its own node: from then on its
// checks are on that node, and node's deletion is no loss. Called before
// the recipe deletes node.
var Unguard func(l any)

// Label names the recipe and the lock path of a *conn.Lease just granted,
// before it is handed out: what its hold and loss are reported under
// (conn.Metrics; without it, recipe "" and the node's parent). Local grants
// (LocalLease) take their node's.
var Label func(l any, recipe, lock string)

// Metrics returns the conn.Metrics of a *conn.Session (conn.WithMetrics),
// or nil without one.
var Metrics func(sess any) any

// Releasing(l, true) tells a *conn.Lease that its recipe is about to
// delete its node: the deletion, if the lease sees it before Released, is
// reported to conn.Metrics as the end of the hold, not as a loss.
// Releasing(l, false) takes it back, for a delete the server refused.
var Releasing func(l any, on bool)
