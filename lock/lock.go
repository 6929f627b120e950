// Package lock holds what every lock of this module shares: Locker,
// Participant, Option and the errors they all return (wrapped), so that
// one errors.Is works for every recipe.
//
// # Acquire, TryAcquire and Release: one contract
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
//     most 100 ms after ctx ends, holding nothing and leaving nothing
//     behind on error. A session lost while waiting is not an error:
//     Acquire starts over in the next.
//   - TryAcquire never waits: (nil, false, nil) when the lock is taken.
//   - The *conn.Lease returned is the grant: watch Lost, fence writes.
//   - Release deletes the node; after a loss it returns nil.
//   - Errors say the recipe, the operation and the lock's path once, then
//     the cause: "mutex: release /locks/a: lock: not held".
//
// docs/safety.md says what holds under which fault.
package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Errors every lock of this module returns, wrapped; compare with errors.Is.
var (
	// ErrNotHeld: Release on a handle that holds nothing; nothing changed.
	ErrNotHeld = errors.New("lock: not held")

	// ErrReleasePending: the release's delete could not be confirmed. The
	// lock counts as released (do not call Release again); the node is
	// deleted in the background. It also matches the cause.
	ErrReleasePending = errors.New("lock: release pending (the node may still exist; deleting it in the background)")

	// ErrCreatePending: Acquire or TryAcquire failed without learning
	// whether its create made a node. Nothing is held; the node, if any, is
	// deleted in the background. It also matches the cause.
	ErrCreatePending = errors.New("lock: create pending (its answer was lost and the node could not be looked for; deleting it in the background if it exists)")

	// ErrNotOwner: Release of a goroutine-owned lock (mutex, rwlock) by a
	// goroutine that does not hold it while another does. Nothing changed.
	ErrNotOwner = errors.New("lock: not owner (held by another goroutine of this process)")

	// ErrNotRevocable: Revoke refused a sealed node (see WithRevocable).
	ErrNotRevocable = errors.New("lock: lock node is sealed, not revocable")
)

// WithLabel returns a copy of ctx carrying label (a request id, a job
// name), which Acquire and TryAcquire write into the node they create for
// Participants to show; a node passed on by WithLocalHandoff keeps its
// first holder's (Participant.LocalHandoff). A label over 256 bytes, not UTF-8 or with control
// characters fails with conn.ErrInvalidArgument.
func WithLabel(ctx context.Context, label string) context.Context {
	return locknode.WithLabel(ctx, label)
}

// Locker is what every lock of this module is, and what a
// multilock.MultiLock is made of.
type Locker interface {
	// Acquire blocks until held or ctx ends.
	Acquire(ctx context.Context) (*conn.Lease, error)
	// Release gives the lock back (errors: this package's).
	Release(ctx context.Context) error
	// Path is the lock's path in its session (without the namespace).
	Path() string
}

// Participant is one contender, ours or a foreign client's, as the
// recipes' Participants (and leader's Leader and Observe) report it.
type Participant struct {
	Node    string // the node's path
	Holding bool   // a holder (of a lease; for an election, the leader), not a waiter
	Seq     int32  // the sequence number the server gave the node
	ID      string // the unique acquire id, or an election participant's id
	Host    string // the host that queued it, when its data tells (Known)
	PID     int    // the process that queued it, likewise
	// Known is false when the node's data does not say which process
	// queued it; then only Node, Holding, Seq and ID are set.
	Known bool
	Label string // WithLabel of the acquire that created the node, "" for none or once revoked
	// LocalHandoff: the node's handle passes it between the goroutines of
	// its process without a write (WithLocalHandoff), so ID and Label are
	// its first holder's; the goroutine holding it now may be another.
	LocalHandoff bool
}

// Option configures a recipe's New. A recipe refuses an option that does
// not apply to it, a nil one and a repeated one, with an error matching
// conn.ErrInvalidArgument that names the option and the recipe.
type Option func(*lockopt.Config) error

// WithRevocable makes the handle's nodes revocable instead of sealed:
// Revoke, or Curator's Revoker, may then ask the holder to let go (its
// Lease.Revoked closes). Taken by mutex, rwlock and semaphoremutex.
func WithRevocable() Option {
	return lockopt.Give(lockopt.Revocable)
}

// WithLocalHandoff makes the goroutines that acquire the lock through one
// session share one node, passed between them without a request at most
// maxPasses (>= 1) times and until budget (0: none) has passed since its
// grant: another process waits for at most maxPasses+1 holds. Taken by
// mutex.New and semaphoremutex.New (docs/design.md, "In-process handoff").
func WithLocalHandoff(maxPasses int, budget time.Duration) Option {
	return func(c *lockopt.Config) error {
		c.Given |= lockopt.LocalHandoff
		c.Handoff = &lockopt.Bound{MaxPasses: maxPasses, Budget: budget}
		return nil
	}
}

// Revoke asks the holder of node (a Participant.Node or Lease.Path) to
// release, as Curator's Revoker.attemptRevoke does: its Lease.Revoked
// closes. A waiter's node keeps the request until its grant, except a
// semaphore's of more than one lease (its lease is another node). A sealed
// node (the default), or one s may not write, fails with ErrNotRevocable; a
// name not a lock contender's with conn.ErrInvalidArgument; a node that is
// gone is nil.
func Revoke(ctx context.Context, s *conn.Session, node string) error {
	if err := revoke(ctx, s, node); err != nil {
		return fmt.Errorf("lock: revoke %s: %w", node, err)
	}
	return nil
}

func revoke(ctx context.Context, s *conn.Session, node string) error {
	if err := zkpath.Validate(node); err != nil {
		return err
	}
	if !locknode.Revocable(zkpath.Base(node)) {
		return fmt.Errorf("not a lock's contender node: %w", conn.ErrInvalidArgument)
	}
	if s == nil {
		return fmt.Errorf("nil session: %w", conn.ErrInvalidArgument)
	}
	ep, err := connlink.Of(s).Epoch(ctx)
	if err != nil {
		return err
	}
	for {
		data, st, err := connlink.Of(ep).Get(ctx, node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("%w: %w", ErrNotRevocable, err)
		case err != nil:
			return err
		}
		// A sealed node gives its own session every right: refuse it here.
		if d, _ := locknode.DecodeData(data); d.Sealed {
			return ErrNotRevocable
		}
		_, err = connlink.Of(ep).Set(ctx, node, []byte(locknode.RevokeMark), st.Version)
		switch {
		case err == nil || errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // changed since we read it: read it again
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("%w: %w", ErrNotRevocable, err)
		}
		return err
	}
}
