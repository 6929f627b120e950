// Package queue is the engine of every sequential-node recipe: the mutex,
// the read/write lock and the semaphore's internal lock. A recipe is a
// Queue with a rule, its Config: a Schema (package locknode) names its
// nodes and recognises contenders; a Predicate decides, from the
// contenders in queue order and our index, whether we hold the lock and
// whom to watch. Options say how the nodes are made and grants reported.
//
//	q, err := queue.New(sess, path, queue.Config{
//		Schema:    locknode.HostKindSchema{Host: locknode.Hostname(), Kind: "R"},
//		Predicate: queue.NoneBefore("W"),
//	}, queue.Options{Recipe: "rwlock"})
//	lease, err := q.Acquire(ctx) // ... q.Release(ctx, lease)
//
// A Queue keeps no state between acquires; reentrancy and ownership are
// the recipe's. The arguments are in docs/design.md, "The sequential-node
// queue" and its subsections.
package queue
