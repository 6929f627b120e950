// Package connlink lets the module's recipes reach what package conn keeps
// out of its public API, with the compiler checking every call.
//
// Package conn keeps its types (Session, Epoch, Lease) and their godoc in
// its own package, yet the recipes need operations conn does not export:
// make a lease, mark it released, read the session's sealed ACL, and the
// rest below. Each of the three types embeds a Link, through an unexported
// alias, to a view of itself: a value of an unexported type of conn whose
// methods implement this package's Session, Epoch or Lease interface. Of
// returns that view; its methods take and return conn's own types (the
// type parameters), so nothing is asserted at run time and nothing is
// wired at init.
//
// Only this module can call it: the package is internal, and Link's field
// and method are unexported, so the embedded field adds nothing to conn's
// API.
package connlink

import (
	"context"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/metrics"
)

// Link holds the view of the value that embeds it. Package conn sets it
// when it makes the value (NewLink); Of reads it.
type Link[T any] struct{ view T }

// NewLink returns a Link to view.
func NewLink[T any](view T) Link[T] { return Link[T]{view: view} }

func (l Link[T]) linked() T { return l.view }

// Of returns the view linked to x: for a *conn.Session a Session, for a
// *conn.Epoch an Epoch, for a *conn.Lease a Lease.
func Of[T any](x interface{ linked() T }) T { return x.linked() }

// Session is what the recipes reach of a *conn.Session; E is *conn.Epoch.
type Session[E any] interface {
	// Epoch returns the live epoch, waiting (bounded by ctx) while there
	// is none because the last one was lost and the next has not begun.
	// When ctx ends first and the last attempt at a new session failed,
	// the error also matches why (conn.ErrAuthFailed).
	Epoch(ctx context.Context) (E, error)

	// CheckWire runs zktest.CheckWire's checks on the session, which
	// Connect made with conn.WithPatchedZK, and closes it. It returns nil
	// or an error matching conn.ErrZKVersion that lists what does not
	// hold; any other error (ctx's end, the server's) is no verdict on
	// go-zookeeper.
	CheckWire(ctx context.Context) error

	// SealedACL returns the ACL a recipe gives the lock nodes it seals:
	// the session's ACL (conn.WithACL) with WRITE and ADMIN removed from
	// every entry, plus the session's own digest identity with ALL. Only
	// that session can then change the node's data or its ACL.
	SealedACL() []zk.ACL

	// Shared returns the map in which the recipes keep per-session state
	// (the in-process handoff's cohorts, package cohort), keyed by what
	// they choose. It lives as long as the session.
	Shared() *sync.Map

	// Closing returns a channel closed when Close is called on the
	// session: local waiters (package cohort) give up then, as requests on
	// the session fail with conn.ErrClosed.
	Closing() <-chan struct{}

	// Metrics returns the session's hooks (conn.WithMetrics; zero
	// without), never nil. The recipes report through package queue's
	// helpers.
	Metrics() *metrics.Hooks

	// Stats returns a snapshot of the requests and watch events of the
	// session so far: what tests and benchmarks count a recipe's cost by.
	Stats() Stats

	// ACL returns the ACL recipes give the nodes they create
	// (conn.WithACL), apart from their sealed lock nodes (SealedACL). A
	// copy: changing it changes nothing.
	ACL() []zk.ACL

	// Ensemble names the ZooKeeper ensemble the session connects to: the
	// server addresses given to conn.Connect, sorted, without duplicates,
	// joined with ",". Sessions given the same addresses, in any order,
	// name the same ensemble; nothing asks the servers, so one ensemble
	// reached through other addresses (another host name, a subset of its
	// servers) gets another name. Package multilock tells the locks of
	// one ensemble apart by it.
	Ensemble() string

	// FullPath is path p of the session as the server knows it: with the
	// session's namespace (conn.WithNamespace) in front. p is not checked.
	FullPath(p string) string

	// Logger returns the session's logger (conn.WithLogger; silent by
	// default), which the recipes built on the session log through.
	Logger() *zap.Logger

	// FailedOp returns the place (from 0) among its ops of the op that a
	// multi of the session (Epoch.Multi, conn.Lease.GuardedWrite) failed
	// on, when the server refused the multi for it (nothing was applied);
	// ok is false for any other error (a connection loss, the epoch's
	// end) and nil.
	FailedOp(err error) (index int, ok bool)
}

// Epoch is what the recipes reach of a *conn.Epoch; L is *conn.Lease.
type Epoch[L any] interface {
	// NewLease makes a lease for node path, which the epoch's session
	// created and holds. Recipes call it when they acquire. czxid is the
	// node's czxid when the recipe knows it (it read the node and found it
	// its own): a node at path with another czxid is not the lease's. With
	// czxid 0 the lease learns the node's czxid from its first read of the
	// node, which must find it owned by the session (see conn.Lease.Fence).
	NewLease(path string, czxid int64) L

	// Unwatch tells the epoch that its caller stopped waiting on ch, a
	// channel the epoch's GetW, ExistsW or ChildrenW returned. If no other
	// watcher of the session waits on that path and kind and the watch has
	// not fired, conn removes it from the server (removeWatches) before
	// any later request of the epoch, and waits for the answer bounded by
	// ctx and the epoch; with ctx ended it returns at once and the removal
	// still goes out. A fired or already stopped channel costs nothing.
	Unwatch(ctx context.Context, ch <-chan zk.Event) error

	// SessionPassword returns a copy of the password of the epoch's
	// ZooKeeper session, as the Java client's getSessionPasswd gives it,
	// for zktest.ExpireEpoch. A secret: it lets anyone attach to the
	// session.
	SessionPassword() []byte

	// CreateWritten returns a channel closed once the next create request
	// written on the epoch's connection (after the call) has gone to the
	// server; never closed if none is. A request sent after that is
	// answered after the create (ZooKeeper answers a session's requests in
	// order): the engine sends its listing right behind its create.
	CreateWritten() <-chan struct{}

	// Context returns the context cancelled (with the reason as cause)
	// when the epoch ends: the context the engine's background work on
	// that epoch runs on.
	Context() context.Context

	// GetACL reads the ACL and stat of node path, as the epoch's other
	// reads do (counted as metrics.OpGetACL, retried on connection loss). The
	// queue's waiters read their predecessor's ACL with its data, to tell
	// whether a data change of it can be trusted as its release.
	GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error)

	// SetACL sets the ACL of node path (counted as metrics.OpSetACL, retried
	// on connection loss). rwlock sets the ACL a write node already has
	// to mark it kept after a downgrade (its ACL version is then above 0).
	SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error)

	// Timeout returns the session timeout the server granted.
	Timeout() time.Duration

	// The epoch's node operations. Each runs in this epoch only, as
	// conn.Session's do in the live one: an epoch that ends cuts it with an
	// error matching conn.ErrEpochEnded.

	// Get reads node path's data. Retried on connection loss.
	Get(ctx context.Context, path string) ([]byte, *zk.Stat, error)

	// GetW is Get leaving a data watch: its channel gets one event (the
	// node changed or was deleted, or the epoch ended) and is then closed.
	GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error)

	// Children lists node path's children (names). Retried.
	Children(ctx context.Context, path string) ([]string, *zk.Stat, error)

	// ChildrenW is Children leaving a child watch: its channel gets one
	// event (a child came or went, the node was deleted, or the epoch
	// ended) and is then closed. Counted as metrics.OpChildren.
	ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error)

	// Exists tells whether node path exists. Retried.
	Exists(ctx context.Context, path string) (bool, *zk.Stat, error)

	// ExistsW is Exists leaving a watch (created, changed or deleted).
	ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error)

	// Set writes node path's data if its version matches (-1: any);
	// retried only with a real version.
	Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error)

	// Delete deletes node path if its version matches (-1: any). Retried,
	// so zk.ErrNoNode may mean an earlier attempt deleted it; for a path
	// others may create again, delete through Multi instead.
	Delete(ctx context.Context, path string, version int32) error

	// Create creates a node and returns its path (with the sequence
	// number if sequential); only non-sequential creates are retried.
	Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error)

	// CreateParents creates every missing ancestor of path (and of the
	// namespace) as a container node; existing ones are fine.
	CreateParents(ctx context.Context, path string) error

	// Multi runs ops (*zk.CreateRequest, *zk.DeleteRequest,
	// *zk.SetDataRequest, *zk.CheckVersionRequest) atomically. Never
	// retried; a refused multi's error names the failing op and path and
	// matches the server's error (Session.FailedOp gives its place).
	Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)

	// Sync makes the server the epoch talks to catch up with the leader.
	Sync(ctx context.Context, path string) error
}

// Lease is what the recipes reach of a *conn.Lease; L is *conn.Lease.
type Lease[L any] interface {
	// Released marks the lease as no longer held: its Lost channel is
	// closed and Err says released. Recipes call it when they delete the
	// node (or hand its deletion to the background); it deletes nothing.
	Released()

	// Local returns a local grant on the lease's node, as a lease of its
	// own: same node, epoch and token, pass as its Fence's Pass, and its
	// own Lost channel, closed when it is released (Released) or when the
	// node's lease is lost. Its guarded writes are refused once it is
	// released, whether or not the node still exists.
	Local(pass int64) L

	// HoldWrites waits until no guarded write through the lease is in
	// flight and keeps new ones waiting until the returned function is
	// called; they then see the lease released, or go on if it was not.
	// Package cohort holds it while it releases a local grant, so that a
	// grant's write is answered before the next grant on the node exists.
	HoldWrites() (done func())

	// RevokeSeen reports whether a revoke request has been seen on the
	// lease's node (its Revoked channel is closed), without starting the
	// node watch that Revoked starts.
	RevokeSeen() bool

	// Guard makes the lease, just granted and not handed out yet, a grant
	// that stands on node, another node of the same session that exists
	// and whose czxid is zxid: its guarded writes and CheckOp check node
	// instead of its own, node's deletion makes it lost (once watched),
	// and its Fence is {zxid, pass}. rwlock's downgrade: a read grant that
	// stands on the goroutine's write node.
	Guard(node string, zxid, pass int64)

	// Unguard hands a grant made by Guard to its own node: from then on
	// its checks are on that node, and node's deletion is no loss. Called
	// before the recipe deletes node.
	Unguard()

	// CheckOp returns the check that conn.Lease.GuardedWrite puts first,
	// for a multi built elsewhere (Epoch.Multi on the lease's epoch):
	// the multi then commits only while the node the grant stands on (see
	// Guard) exists, and the server refuses all of it once the node is
	// gone. It checks no data version (-1): a revocable node's data may be
	// changed by a revoke request, which is no loss. A refused check fails
	// the multi at the check's place (Session.FailedOp), matching
	// zk.ErrNoNode. Unlike GuardedWrite, Multi neither closes Lost on such
	// a refusal nor refuses ops that set the lock node's own data, and the
	// check passes for a released grant while its node stays (the
	// in-process handoff's grants share one node; rwlock keeps the write
	// node of a goroutine that downgraded, its write lease released, while
	// a writer is queued between its two nodes): GuardedWrite checks Err
	// first. A check made on a guarded grant before Unguard fails once the
	// guard is gone. Each call returns a new request.
	CheckOp() *zk.CheckVersionRequest

	// Label names the recipe and the lock path of the lease, just granted
	// and not handed out yet: what its hold and loss are reported under
	// (the Lock hook; without it, recipe "" and the node's parent). Local
	// grants (Local) take their node's. It also makes a lease made
	// Unreported report again.
	Label(recipe, lock string)

	// Unreported makes the lease, just granted and not handed out yet,
	// report neither its hold nor its loss to the Lock hook until Label is
	// called: a recipe's internal lock (semaphoremutex's PATH/locks), held
	// while a lease is taken, is no holder's work.
	Unreported()

	// Releasing(true) tells the lease that its recipe is about to delete
	// its node: the deletion, if the lease sees it before Released, is
	// reported to the Lock hook as the end of the hold, not as a loss.
	// Releasing(false) takes it back, for a delete the server refused.
	// A lease whose epoch has ended when Releasing(true) is called is
	// reported lost (the node went with the session), not released.
	Releasing(on bool)

	// Gone tells the lease that its recipe found the node it stands on
	// (its own, or its Guard) deleted (or not its own) before any delete
	// of its own could have been applied: the lease ends as lost
	// (metrics.CauseNodeDeleted), not as a hold, and a later Released
	// changes nothing.
	Gone()
}
