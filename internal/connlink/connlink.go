// Package connlink lets the module's recipes reach what package conn keeps
// out of its public API: conn's Session, Epoch and Lease each embed a Link
// (unexported members: no API) to a view implementing the interface of the
// same name here, which Of returns; the locks embed one to their session.
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

// Find returns the view linked to x, if x embeds a Link[T]: the session a
// lock of this module was made with, for multilock.
func Find[T any](x any) (v T, ok bool) {
	if l, ok := x.(interface{ linked() T }); ok {
		return l.linked(), true
	}
	return v, false
}

// Session is what the recipes reach of a *conn.Session; E is *conn.Epoch.
type Session[E any] interface {
	Epoch(ctx context.Context) (E, error) // the live epoch, waiting (bounded by ctx) while there is none
	CheckWire(ctx context.Context) error  // zktest.CheckWire's checks; closes the session
	// SealedACL is the session's ACL without WRITE and ADMIN, plus its own
	// digest identity with ALL: only the session can change such a node.
	SealedACL() []zk.ACL
	Shared() *sync.Map                       // the recipes' per-session state
	Closing() <-chan struct{}                // closed when Close is called
	Metrics() *metrics.Hooks                 // conn.WithMetrics's hooks, never nil
	Stats() Stats                            // a snapshot of requests and watch events
	ACL() []zk.ACL                           // a copy of conn.WithACL's ACL
	Ensemble() string                        // the Connect addresses, sorted, deduplicated, joined with ","
	FullPath(p string) string                // p with the namespace in front, unchecked
	Logger() *zap.Logger                     // conn.WithLogger's
	FailedOp(err error) (index int, ok bool) // the op a refused multi failed on
}

// Epoch is what the recipes reach of a *conn.Epoch; L is *conn.Lease.
type Epoch[L any] interface {
	NewLease(path string, czxid int64) L // czxid 0: unknown, learnt from the first read
	// Unwatch: the caller stopped waiting on ch; unless another waits on it,
	// the server's watch is removed before the epoch's next request.
	Unwatch(ctx context.Context, ch <-chan zk.Event) error
	SessionPassword() []byte // a copy, for zktest.ExpireEpoch: a secret
	// CreateWritten is closed once the epoch's next create request has been
	// written; a request sent after that is answered after the create.
	CreateWritten() <-chan struct{}
	Context() context.Context // cancelled, with the reason as cause, when the epoch ends
	Timeout() time.Duration   // the session timeout the server granted

	// The node operations run in this epoch only: its end cuts them with
	// an error matching conn.ErrEpochEnded. Retried on connection loss
	// unless said otherwise; a W variant leaves a watch that gets one event.

	GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error)
	SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error)
	Get(ctx context.Context, path string) ([]byte, *zk.Stat, error)
	GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Children(ctx context.Context, path string) ([]string, *zk.Stat, error)
	ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) // counted as metrics.OpChildren
	Exists(ctx context.Context, path string) (bool, *zk.Stat, error)
	ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error)  // created, changed or deleted
	Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) // retried only with a real version
	// Delete's zk.ErrNoNode may mean an earlier try deleted it; for a path
	// others may create again, use Multi.
	Delete(ctx context.Context, path string, version int32) error
	Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) // retried if not sequential
	CreateParents(ctx context.Context, path string) error                                            // the missing ancestors, as containers
	// Multi is never retried; a refused multi's error names the failing op
	// and matches the server's (Session.FailedOp).
	Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)
	Sync(ctx context.Context, path string) error
}

// Lease is what the recipes reach of a *conn.Lease; L is *conn.Lease.
type Lease[L any] interface {
	Released() // marks the lease released (Lost closes), deleting nothing
	// Local returns a local grant on the lease's node, a lease of its own
	// with pass as its Fence's Pass.
	Local(pass int64) L
	// HoldWrites waits out the lease's guarded writes and holds new ones
	// until done; without wait it returns nil if any is in flight.
	HoldWrites(wait bool) (done func())
	RevokeSeen() bool // whether Revoked is closed, without starting its watch
	// Guard makes the lease stand on node (czxid zxid), for rwlock's
	// downgrade: its checks are on node and its Fence is {zxid, pass}.
	Guard(node string, zxid, pass int64)
	Unguard() // moves a Guard grant onto its own node, before node is deleted
	// CheckOp returns GuardedWrite's check, which passes for a released
	// local grant while its node stays.
	CheckOp() *zk.CheckVersionRequest
	Label(recipe, lock string)               // what its hold and loss are reported under; undoes Unreported
	Zxid(ctx context.Context) (int64, error) // Fence's Zxid, without reading the node once known
	Unreported()                             // report neither hold nor loss until Label: a recipe's internal lock
	Releasing(on bool)                       // the recipe deletes the node (on), so its deletion is no loss; or gave up
	// Gone: the recipe found the node gone before its own delete; the lease
	// ends as lost, and a later Released changes nothing.
	Gone()
}

// Stats is a snapshot of what a conn.Session has asked of ZooKeeper,
// retries included: what tests and benchmarks measure.
type Stats struct {
	Requests    map[string]int64 // by operation (the metrics.Op* names)
	WatchEvents int64            // the watch notifications the servers sent
	WatchesSet  int64            // the GetW and ExistsW calls that set a watch
	QuorumSyncs int64            // the quorum timer's syncs, not in Requests
}

// TotalRequests is the sum of Requests.
func (s Stats) TotalRequests() int64 {
	var n int64
	for _, v := range s.Requests {
		n += v
	}
	return n
}

// Sub returns s minus an earlier snapshot, for measuring one stretch of work.
func (s Stats) Sub(earlier Stats) Stats {
	d := Stats{
		Requests:    make(map[string]int64, len(s.Requests)),
		WatchEvents: s.WatchEvents - earlier.WatchEvents,
		WatchesSet:  s.WatchesSet - earlier.WatchesSet,
		QuorumSyncs: s.QuorumSyncs - earlier.QuorumSyncs,
	}
	for k, v := range s.Requests {
		d.Requests[k] = v - earlier.Requests[k]
	}
	return d
}

// OptionName names what a conn.Option sets ("conn.WithSessionTimeout"; ""
// for an invalid one), so that a test helper's default gives way to the
// caller's: Connect refuses an option given twice. Set by package conn.
var OptionName func(opt any) string
