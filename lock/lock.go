// Package lock holds what every lock of this module shares: the Locker
// interface (what multilock combines) and the errors every recipe returns
// with the same meaning. The recipes return these values (wrapped) and
// declare no copies of them, so one errors.Is(err, lock.ErrNotHeld) works
// for every recipe, and the message reads the same in each.
//
// # Acquire, TryAcquire and Release: one contract
//
// Every lock of the module, side by side (README.md's "Which lock do I
// want" adds the cost per handoff and the paths shared with Curator and
// kazoo):
//
//	lock                   owner      reentrant       fair          Release by another    TryAcquire
//	                                                                goroutine
//	mutex.InterProcessMutex goroutine yes, counted    yes (FIFO)    ErrNotOwner           yes
//	rwlock read/write Lock goroutine  yes, counted    yes (FIFO)    ErrNotOwner           yes
//	semaphoremutex.Mutex   handle     no: waits       yes (FIFO)    allowed               yes
//	semaphoremutex.Semaphore lease    no: one lease   yes (FIFO)    allowed (the lease)   yes
//	                                  per Acquire
//	exclusive.Lock         handle     no: waits       no (a race)   allowed               yes
//	multilock.MultiLock    handle     no: ErrBusy     per lock      as its locks allow    no
//	leader.Election        handle     no: ErrCampaigning yes (FIFO) Resign: allowed       no
//
// What every one of them does (a Semaphore holds several leases per
// handle, so its Release names the lease: ReturnLease(ctx, lease), as
// Curator's returnLease):
//
//   - Acquire blocks until the lock is held or ctx ends; one whose ctx ends
//     first returns an error matching ctx.Err() and leaves nothing behind
//     (its node is deleted, in the background if need be). A session lost
//     while waiting is not an error: Acquire starts over in the next one.
//     A request that fails with a connection loss is retried as the
//     session's retry policy says (conn.WithRetryPolicy); once the policy
//     gives up (e.g. MaxAttempts 1), Acquire returns that error (matching
//     conn.ErrConnectionLoss) while the session lives, and its node is
//     deleted as for an ended ctx.
//     An acquire that fails without learning whether its create made a
//     node (ErrCreatePending) leaves that node to a goroutine that looks
//     for it and deletes it, as a Release does with ErrReleasePending.
//   - TryAcquire never waits for another holder: it returns (nil, false,
//     nil) when the lock is taken, and takes it otherwise.
//   - The *conn.Lease returned is the grant: Lost closes when the lock must
//     be taken as lost (the session ended, the node was deleted by someone
//     else), Fence is the fencing token, GuardedWrite and CheckOp guard
//     writes with it.
//   - Release deletes the node: nil once it is gone. ErrReleasePending when
//     the delete's outcome is unknown: the handle no longer holds the lock,
//     and the node is deleted in the background. ErrNotHeld when the handle
//     (for mutex and rwlock, the goroutine) holds nothing. Any other error
//     (the server refused the delete) leaves the lock held: call Release
//     again.
//   - Release after loss (Lost closed) returns nil: the node went with its
//     session, or someone deleted it; there is nothing left to release,
//     and the handle can acquire again. When only the local timer ended
//     the session (conn's "The local timer"), the node may still be on the
//     server until the server expires the session (within one session
//     timeout): nobody gets the lock before that.
//   - Errors say the recipe, the operation and the lock's path once, then
//     the cause: "mutex: release /locks/a: lock: not held".
package lock

import (
	"context"
	"errors"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/nodelabel"
)

// Errors every lock of this module returns with the same meaning. Compare
// with errors.Is; the recipes wrap them once, with the operation and the
// lock's path ("mutex: release /locks/a: lock: not held").
var (
	// ErrNotHeld: Release was called on a handle that does not hold the
	// lock (never acquired, or already released), so there was nothing to
	// release and nothing changed; calling Release again cannot help. Not
	// to be confused with a lock that another goroutine of this process
	// holds (ErrNotOwner): that one stays held.
	ErrNotHeld = errors.New("lock: not held")

	// ErrReleasePending: a release whose deletion could not be confirmed
	// (the connection was lost, or ctx ended mid-request) while the
	// session lives. The handle no longer holds the lock and its lease is
	// marked released; its node is deleted in the background until it is
	// gone or the session ends, and other processes may see the lock held
	// until then. Treat it as released: do not call Release again. The
	// error also matches the cause (context.Canceled,
	// conn.ErrConnectionLoss, ...).
	ErrReleasePending = errors.New("lock: release pending (the node may still exist; deleting it in the background)")

	// ErrCreatePending: an Acquire or TryAcquire failed without learning
	// whether a node it wrote exists: the create's answer was lost with
	// the connection, and the search for the node by its unique id failed
	// too (a bounded conn.RetryPolicy, the connection lost again). The
	// handle holds nothing. The node, if it exists, is not left for the
	// session's life: a goroutine bound to the session keeps looking for
	// it and deletes it, until that is done or the session ends; other
	// processes may wait behind it until then. Acquire again at will. The
	// error also matches the cause (conn.ErrConnectionLoss, ...).
	ErrCreatePending = errors.New("lock: create pending (its answer was lost and the node could not be looked for; deleting it in the background if it exists)")

	// ErrNotOwner: Release of a goroutine-owned lock (mutex, rwlock) was
	// called by a goroutine that does not hold it while another goroutine
	// of this process does. Nothing changed: the lock stays held.
	ErrNotOwner = errors.New("lock: not owner (held by another goroutine of this process)")

	// ErrNotRevocable: a request to revoke a lock (the recipes' Revoke
	// methods) was refused because the holder's node is sealed (the
	// default: only its owner's session may change it), whichever session
	// asked, the holder's own included; nothing was written into the node.
	// Only holders that created their nodes revocable (the recipes'
	// WithRevocable option) can be asked to release.
	ErrNotRevocable = errors.New("lock: lock node is sealed, not revocable")

	// ErrInvalidLabel: an acquire was refused before it queued anything
	// because the label its ctx carries (WithLabel) is longer than
	// MaxLabel bytes, not valid UTF-8, or holds control characters.
	ErrInvalidLabel = errors.New("lock: invalid label")
)

// MaxLabel is the longest label WithLabel may carry, in bytes.
const MaxLabel = 256

// WithLabel returns a copy of ctx that carries label, what the caller
// calls the holder (a request id, a job name): every lock's Acquire and
// TryAcquire called with it writes the label into the node it creates,
// beside host, pid and acquire id, where Participants (Label) and the
// zkrecipes command show it. Curator and kazoo read our node data as
// opaque bytes, so they share the lock as before. An acquire whose label
// is longer than MaxLabel bytes, not valid UTF-8 or holds control
// characters fails with ErrInvalidLabel and creates nothing. The label is
// the node's: a re-entry, or a waiter of this process handed the node
// (mutex.WithLocalHandoff), keeps the label of the acquire that created
// it. A leader.Election's node data is its participant id, which already
// names it: Campaign writes no label.
func WithLabel(ctx context.Context, label string) context.Context {
	return nodelabel.With(ctx, label)
}

// Locker is what every lock of this module is (exclusive.Lock,
// mutex.InterProcessMutex, semaphoremutex.Mutex, rwlock's read and write
// locks), and what a multilock.MultiLock is made of.
//
// A lock is identified by where it is on the servers: its Session's
// ensemble (conn.Session.Ensemble) and its full path, the Session's
// namespace followed by Path (conn.Session.FullPath).
type Locker interface {
	// Acquire blocks until held or ctx ends.
	Acquire(ctx context.Context) (*conn.Lease, error)
	// Release gives the lock back (see the package doc for its errors).
	Release(ctx context.Context) error
	// Path is the lock's path in its Session (without the namespace).
	Path() string
	// Session is the session the lock's nodes are created in. A nil
	// Session (a stand-in that is not a ZooKeeper lock) makes Path alone,
	// on no ensemble, the lock's identity.
	Session() *conn.Session
}

// Participant is one contender, as every recipe's Participants method
// lists them (mutex.InterProcessMutex, semaphoremutex.Mutex and Semaphore,
// leader.Election, which also returns it from Leader and Observe): a node
// that counts in the queue, ours or a foreign client's (Curator, kazoo,
// go-zookeeper).
type Participant struct {
	// Node is the node's path.
	Node string
	// Holding is true for a holder of the lock (for a semaphore, of a
	// lease; for an election, the leader), false for a waiter.
	Holding bool
	// Seq is the sequence number the server gave the node.
	Seq int32
	// ID is the contender's id: for a lock, its unique acquire id (the
	// uuid in the name); for an election, the participant id given to
	// leader.New (the node's data, as Curator's LeaderLatch writes it).
	ID string
	// Host and PID say which process queued it, when its data tells
	// (Curator writes only an address, which becomes Host).
	Host string
	PID  int
	// Known is false when the node's data does not say which process
	// queued it (a foreign lock client's, or any election node, whose data
	// is the participant id); then only Node, Holding, Seq and ID are set.
	Known bool
	// Label is the label the holder's acquire carried (WithLabel), ""
	// for none.
	Label string
}
