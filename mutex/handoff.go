package mutex

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/cohort"
)

// WithLocalHandoff makes the goroutines that acquire the mutex through one
// session (through this handle or any other handle on the same session and
// path made with the same bound) share one ZooKeeper contender: the first
// queues a node; the others wait in the process, first come first served,
// and the lock passes from one to the next without a ZooKeeper request,
// for at most maxPasses local handoffs on one node, and no more once
// budget has passed since the node was granted (0: no time budget). Then
// the holder's release deletes the node, so that the contenders of other
// processes queued behind it enter, and the next local waiter queues a new
// node. A contender of another process therefore waits for at most
// maxPasses+1 holds of this process (or budget plus one hold) before its
// turn, where without the option it waits for the holds queued before it.
//
// Every grant is a lease of its own: released, it refuses guarded writes
// (GuardedWrite; not a caller's Multi behind its CheckOp, which checks the
// node, shared by the grants on it); its Lost closes with the node's; its
// Fence grows strictly with every grant (the node's czxid, then the
// grant's pass on it: Fence.Zxid alone is the same for the grants on one
// node). A release waits for the guarded writes of its grant that are in
// flight, so none reaches the server after the next grant exists.
// Reentrancy stays per goroutine.
//
// A local grant is made only where a remote one could be: the node is
// handed on only while its epoch lives, the connection is not suspended,
// and no deletion of the node by someone else has been seen (from the
// moment a goroutine waits in the process, the node is watched: one
// getW). Otherwise the release deletes the node and the waiter queues a
// new one. What the process has not heard yet it cannot see: a deletion,
// an expiry or a disconnection not yet notified when the holder releases
// leaves the same window as for a remote grant, whose holder learns of
// them by the same notifications.
//
// Once a revoke request has been seen on the node (WithRevocable: a grant's
// Revoked closed, and Revoked was called, which starts the watch), the
// node is not passed on in the process any more: the next release deletes
// it, so that whoever asked gets the lock after the holders queued before
// it.
//
// Default: off (each goroutine its own ZooKeeper contender, as Curator's
// threads are: every handoff is a ZooKeeper commit); see docs/design.md.
// maxPasses below 1 or a negative budget make New fail with an error
// matching conn.ErrInvalidOption.
func WithLocalHandoff(maxPasses int, budget time.Duration) Option {
	return func(c *config) error {
		c.handoff = &cohort.Bound{MaxPasses: maxPasses, Budget: budget}
		return nil
	}
}
