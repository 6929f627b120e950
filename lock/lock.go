// Package lock holds what every lock of this module shares: the Locker
// interface that multilock combines, the Participant the recipes list, the
// Option their New functions take, and the errors they all return
// (wrapped), so that one errors.Is works for every recipe.
//
// # Acquire, TryAcquire and Release: one contract
//
// The locks side by side:
//
//	lock                      owner      reentrant           fair        Release by another goroutine  TryAcquire
//	mutex.InterProcessMutex   goroutine  yes, counted        FIFO        ErrNotOwner                   yes
//	rwlock's read/write Lock  goroutine  yes, counted        FIFO        ErrNotOwner                   yes
//	semaphoremutex.Mutex      handle     no: waits           FIFO        allowed                       yes
//	semaphoremutex.Semaphore  lease      one lease a call    FIFO        allowed (ReturnLease)         yes
//	exclusive.Lock            handle     no: waits           no (races)  allowed                       yes
//	multilock.MultiLock       handle     no: ErrBusy         per lock    as its locks allow            no
//	leader.Election           handle     no: ErrCampaigning  FIFO        Resign: allowed               no
//
// What every one of them does:
//
//   - Acquire blocks until the lock is held or ctx ends, and returns at
//     most 100 ms after ctx ends. On error it holds nothing and leaves
//     nothing behind (in the background if need be). A session lost while
//     waiting is not an error: Acquire starts over in the next. A
//     connection loss is retried as conn.WithRetry says, then returned.
//   - TryAcquire never waits: (nil, false, nil) when the lock is taken.
//   - The *conn.Lease returned is the grant: Lost closes when the lock must
//     be taken as lost; Fence and GuardedWrite fence writes.
//   - Release deletes the node (a Semaphore names the lease: ReturnLease).
//     After a loss it returns nil; when only the local timer ended the
//     session, the node may stay, and nobody gets the lock, until the
//     server expires the session.
//   - Errors say the recipe, the operation and the lock's path once, then
//     the cause: "mutex: release /locks/a: lock: not held".
//
// See docs/safety.md for what holds under which fault.
package lock

import (
	"context"
	"errors"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/nodelabel"
)

// Errors every lock of this module returns with the same meaning, wrapped;
// compare with errors.Is.
var (
	// ErrNotHeld: Release on a handle that holds nothing (never acquired,
	// or already released); nothing changed.
	ErrNotHeld = errors.New("lock: not held")

	// ErrReleasePending: the release's delete could not be confirmed (the
	// connection was lost, or ctx ended) while the session lives. The lock
	// counts as released: do not call Release again. The node is deleted in
	// the background until it is gone or the session ends; others may see
	// the lock held until then. It also matches the cause.
	ErrReleasePending = errors.New("lock: release pending (the node may still exist; deleting it in the background)")

	// ErrCreatePending: Acquire or TryAcquire failed without learning
	// whether its create made a node (the answer was lost, and so was the
	// search for it). Nothing is held; a goroutine bound to the session
	// finds and deletes the node, if any. It also matches the cause.
	ErrCreatePending = errors.New("lock: create pending (its answer was lost and the node could not be looked for; deleting it in the background if it exists)")

	// ErrNotOwner: Release of a goroutine-owned lock (mutex, rwlock) by a
	// goroutine that does not hold it while another of this process does.
	// Nothing changed.
	ErrNotOwner = errors.New("lock: not owner (held by another goroutine of this process)")

	// ErrNotRevocable: Revoke refused because the holder's node is sealed
	// (the default; see WithRevocable); nothing was written.
	ErrNotRevocable = errors.New("lock: lock node is sealed, not revocable")
)

// WithLabel returns a copy of ctx carrying label, what the caller calls the
// holder (a request id, a job name). Acquire and TryAcquire write it into
// the node they create, where Participants and the zkrecipes command show
// it (a re-entry or local handoff keeps the node's; Campaign ignores it).
// A label over 256 bytes, not UTF-8 or with control characters fails at
// once, asking nothing, with an error matching conn.ErrInvalidArgument.
func WithLabel(ctx context.Context, label string) context.Context {
	return nodelabel.With(ctx, label)
}

// Locker is what every lock of this module is, and what a
// multilock.MultiLock is made of. A lock of this module, or a type that
// embeds one, is identified by its session's ensemble and its full path
// (namespace included); any other Locker by its Path alone.
type Locker interface {
	// Acquire blocks until held or ctx ends.
	Acquire(ctx context.Context) (*conn.Lease, error)
	// Release gives the lock back (errors: this package's).
	Release(ctx context.Context) error
	// Path is the lock's path in its session (without the namespace).
	Path() string
}

// Participant is one contender as the recipes' Participants (and leader's
// Leader and Observe) report it: a node in the queue, ours or a foreign
// client's (Curator, kazoo, go-zookeeper).
type Participant struct {
	// Node is the node's path.
	Node string
	// Holding is true for a holder of the lock (for a semaphore, of a
	// lease; for an election, the leader), false for a waiter.
	Holding bool
	// Seq is the sequence number the server gave the node.
	Seq int32
	// ID is a lock contender's unique acquire id (from the name, or for
	// rwlock the data), or an election participant's id (leader.New).
	ID string
	// Host and PID say which process queued it, when its data tells
	// (Curator writes only an address, which becomes Host).
	Host string
	PID  int
	// Known is false when the node's data does not say which process
	// queued it (a foreign client's node, an election's, a revoked one);
	// then only Node, Holding, Seq and ID are set.
	Known bool
	// Label is the label the holder's acquire carried (WithLabel), ""
	// for none, or once Revoke has replaced the node's data.
	Label string
}
