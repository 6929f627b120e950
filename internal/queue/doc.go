// Package queue is the engine of every sequential-node recipe: the mutex,
// the read/write lock and the semaphore's internal lock. A recipe is a
// Queue with a rule, its Config: a Schema (package locknode) names its
// nodes and recognises contenders; a Predicate decides, from the
// contenders in queue order and our index, whether we hold the lock and
// whom to watch. Options say how the nodes are made and grants reported.
//
// For example, the read side of a read/write lock:
//
//	q, err := queue.New(sess, path, queue.Config{
//		Schema:    locknode.HostKindSchema{Host: locknode.Hostname(), Kind: "R"},
//		Predicate: queue.NoneBefore("W"),
//	}, queue.Options{Recipe: "rwlock"})
//	lease, err := q.Acquire(ctx) // ... q.Release(ctx, lease)
//
// An acquire creates an ephemeral sequential node (detached from ctx:
// bg.Detach), lists the children once, and waits on the one node the
// predicate names, deciding from that first listing instead of listing
// again after every notification. On error our node is deleted on the
// epoch's context (bg.Settle); an epoch that ends while we wait took our node
// with it, and the acquire starts over in the next. A Queue keeps no state
// between acquires; reentrancy and ownership are the recipe's. A session's
// waiters on one path share their listings and a view of the queue
// (listings).
//
// Nodes are sealed by default (NodeACL): only their session can change
// them, so a First holder's release can carry a handover mark (ReleaseOps)
// that grants the waiter behind with no request.
//
// The arguments are in docs/design.md, "The sequential-node queue" and its
// subsections.
package queue
