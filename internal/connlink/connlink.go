// Package connlink lets the module's recipes reach what package conn keeps
// out of its public API: conn's Session, Epoch and Lease each embed a Link
// to a view of themselves that implements the interface of the same name
// here, and Of returns it. Link's members are unexported, so the embedded
// field adds nothing to conn's API.
package connlink

import (
	"context"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/metrics"
)

// Link holds the view of the value that embeds it.
type Link[T any] struct{ view T }

// NewLink returns a Link to view.
func NewLink[T any](view T) Link[T] { return Link[T]{view: view} }

func (l Link[T]) linked() T { return l.view }

// Of returns the view linked to x (a *conn.Session, Epoch or Lease).
func Of[T any](x interface{ linked() T }) T { return x.linked() }

// Session is what the recipes reach of a *conn.Session; E is *conn.Epoch.
type Session[E any] interface {
	// Epoch returns the live epoch, waiting (bounded by ctx) while there
	// is none; after a failed attempt at a session, the error also
	// matches why (conn.ErrAuthFailed).
	Epoch(ctx context.Context) (E, error)

	// CheckWire runs zktest.CheckWire's checks on the session (made with
	// conn.WithPatchedZK) and closes it: nil, or an error matching
	// conn.ErrZKVersion listing what does not hold.
	CheckWire(ctx context.Context) error

	// SealedACL returns the session's ACL without WRITE and ADMIN, plus its
	// own digest identity with ALL: only the session can change such a node.
	SealedACL() []zk.ACL

	// Shared returns the map of the recipes' per-session state.
	Shared() *sync.Map

	// Closing returns a channel closed when Close is called.
	Closing() <-chan struct{}

	// Metrics returns the session's hooks (conn.WithMetrics), never nil.
	Metrics() *metrics.Hooks

	// Stats returns a snapshot of the session's requests and watch events.
	Stats() Stats

	// ACL returns a copy of the session's ACL (conn.WithACL).
	ACL() []zk.ACL

	// Ensemble names the session's ensemble by its conn.Connect addresses,
	// sorted, deduplicated, joined with ",".
	Ensemble() string

	// FullPath is p with the session's namespace in front, unchecked.
	FullPath(p string) string

	// Logger returns the session's logger (conn.WithLogger).
	Logger() *zap.Logger

	// FailedOp returns the index of the op a refused multi of the session
	// failed on; ok is false for any other error and nil.
	FailedOp(err error) (index int, ok bool)
}

// Epoch is what the recipes reach of a *conn.Epoch; L is *conn.Lease.
type Epoch[L any] interface {
	// NewLease makes a lease for node path, which the epoch's session holds.
	// czxid is the node's if known, else 0: the lease learns it from its
	// first read, which must find the node owned by the session.
	NewLease(path string, czxid int64) L

	// Unwatch tells the epoch its caller stopped waiting on ch: unless
	// another watcher waits on it, the server's watch is removed before the
	// epoch's next request, even if ctx has ended.
	Unwatch(ctx context.Context, ch <-chan zk.Event) error

	// SessionPassword returns a copy of the session's password, for
	// zktest.ExpireEpoch. A secret: it lets anyone attach to the session.
	SessionPassword() []byte

	// CreateWritten returns a channel closed once the epoch's next create
	// request has been written (never, if none is); a request sent after
	// that is answered after the create.
	CreateWritten() <-chan struct{}

	// Context is cancelled, with the reason as cause, when the epoch ends.
	Context() context.Context

	// GetACL reads node path's ACL and stat (metrics.OpGetACL). Retried.
	GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error)

	// SetACL sets node path's ACL (metrics.OpSetACL). Retried.
	SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error)

	// Timeout returns the session timeout the server granted.
	Timeout() time.Duration

	// The node operations run in this epoch only: its end cuts them with
	// an error matching conn.ErrEpochEnded.

	// Get reads node path's data. Retried on connection loss.
	Get(ctx context.Context, path string) ([]byte, *zk.Stat, error)

	// GetW is Get leaving a data watch; its channel gets one event.
	GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error)

	// Children lists node path's children (names). Retried.
	Children(ctx context.Context, path string) ([]string, *zk.Stat, error)

	// ChildrenW is Children leaving a child watch; its channel gets one
	// event. Counted as metrics.OpChildren.
	ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error)

	// Exists tells whether node path exists. Retried.
	Exists(ctx context.Context, path string) (bool, *zk.Stat, error)

	// ExistsW is Exists leaving a watch (created, changed or deleted).
	ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error)

	// Set writes node path's data if its version matches (-1: any);
	// retried only with a real version.
	Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error)

	// Delete deletes node path if its version matches (-1: any). Retried,
	// so zk.ErrNoNode may mean an earlier try deleted it; for a path others
	// may create again, use Multi.
	Delete(ctx context.Context, path string, version int32) error

	// Create creates a node and returns its path; only non-sequential
	// creates are retried.
	Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error)

	// CreateParents creates the missing ancestors of path as containers.
	CreateParents(ctx context.Context, path string) error

	// Multi runs ops atomically. Never retried; a refused multi's error
	// names the failing op and matches the server's (Session.FailedOp).
	Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)

	// Sync makes the server the epoch talks to catch up with the leader.
	Sync(ctx context.Context, path string) error
}

// Lease is what the recipes reach of a *conn.Lease; L is *conn.Lease.
type Lease[L any] interface {
	// Released marks the lease released (Lost closes), deleting nothing.
	Released()

	// Local returns a local grant on the lease's node, a lease of its own
	// with pass as its Fence's Pass; its guarded writes are refused once it
	// is released, even while the node exists.
	Local(pass int64) L

	// HoldWrites waits until no guarded write through the lease is in
	// flight and holds new ones until done is called: a grant's write is
	// answered before the next grant on the node exists.
	HoldWrites() (done func())

	// RevokeSeen reports whether Revoked is closed, without starting its
	// watch.
	RevokeSeen() bool

	// Guard makes the lease, not handed out yet, stand on node (of the same
	// session, czxid zxid): its checks are on node, node's deletion loses
	// it, and its Fence is {zxid, pass}. For rwlock's downgrade.
	Guard(node string, zxid, pass int64)

	// Unguard moves a Guard grant onto its own node, before node is deleted.
	Unguard()

	// CheckOp returns a new check, as GuardedWrite puts first, for a multi
	// built elsewhere: the node the grant stands on exists (any data
	// version: a revoke may change it). A refusal matches zk.ErrNoNode but
	// does not close Lost, and unlike GuardedWrite the check passes for a
	// released grant while its node stays (local grants share a node).
	CheckOp() *zk.CheckVersionRequest

	// Label sets the recipe and lock path the lease's hold and loss are
	// reported under, and undoes Unreported. Local grants take their node's.
	Label(recipe, lock string)

	// Unreported makes the lease report neither hold nor loss until Label:
	// for a recipe's internal lock.
	Unreported()

	// Releasing(true) says the recipe is about to delete the node, so that
	// its deletion is reported as the hold's end, not a loss (unless the
	// epoch has ended); Releasing(false) takes it back.
	Releasing(on bool)

	// Gone says the recipe found the node the lease stands on gone before
	// its own delete: the lease ends as lost (metrics.CauseNodeDeleted), and
	// a later Released changes nothing.
	Gone()
}
