package semaphoremutex

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/cohort"
)

// WithLocalHandoff makes the Mutex handles on one session and path (made
// with the same options) share one ZooKeeper contender: the first acquire
// takes the lease from ZooKeeper; the handles that acquire meanwhile wait
// in the process, first come first served, and the lease passes from one
// to the next without a ZooKeeper request, for at most maxPasses local
// handoffs on one lease, and no more once budget has passed since it was
// granted (0: no time budget). Then the holder's release returns the lease
// to ZooKeeper, so that the contenders of other processes enter, and the
// next local waiter queues again. A contender of another process therefore
// waits for at most maxPasses+1 holds of this process (or budget plus one
// hold) before its turn.
//
// Every grant is a lease of its own: released, it refuses guarded writes
// (GuardedWrite; not a caller's Multi behind its CheckOp, which checks the
// node, shared by the grants on it); its Lost closes with the lease node's;
// its Fence grows strictly with every grant (Fence.Zxid alone is the same
// for the grants on one node). A release waits for the guarded writes of its
// grant that are in flight (another goroutine may be writing through the
// handle's lease), so none reaches the server after the next grant exists.
// The Mutex stays owned by its handle. It applies to New only:
// NewSemaphore refuses it with an error matching conn.ErrInvalidOption.
//
// A local grant is made only where a remote one could be: the lease is
// handed on only while its epoch lives, the connection is not suspended,
// and no deletion of its node by someone else has been seen (from the
// moment a handle waits in the process, the node is watched: one getW).
// Otherwise the release returns the lease and the waiter queues anew.
// What the process has not heard yet it cannot see: a deletion, an expiry
// or a disconnection not yet notified when the holder releases leaves the
// same window as for a remote grant, whose holder learns of them by the
// same notifications.
//
// Once a revoke request has been seen on the node (WithRevocable: a grant's
// Revoked closed, and Revoked was called, which starts the watch), the
// node is not passed on in the process any more: the next release deletes
// it.
//
// Default: off (each handle its own ZooKeeper contender, as Curator's
// InterProcessSemaphoreMutex instances are); see docs/design.md.
// maxPasses below 1 or a negative budget make New fail with an error
// matching conn.ErrInvalidOption.
func WithLocalHandoff(maxPasses int, budget time.Duration) Option {
	return func(c *config) error {
		c.handoff = &cohort.Bound{MaxPasses: maxPasses, Budget: budget}
		return nil
	}
}
