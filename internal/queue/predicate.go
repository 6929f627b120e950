package queue

// Predicate decides, from the contenders in queue order and the index of
// ours, whether we hold the lock and, if not, the name of the contender to
// watch. It must be a pure function, and it is the only thing a recipe
// supplies besides its Schema.
//
// For the engine's cached waiting (see the package documentation) to be
// correct, a predicate must satisfy three conditions:
//
//  1. Its decision depends only on the contenders before ours.
//  2. Removing contenders before ours never turns "acquired" into "not
//     acquired".
//  3. When it says "not acquired", the node it names to watch is a
//     contender before ours whose presence alone keeps us from acquiring:
//     as long as it exists, the answer stays "not acquired" whatever else
//     leaves.
//
// First and NoneBefore satisfy all three. A counting predicate ("fewer than N
// before us", an N-lease semaphore) violates the third: any of the nodes
// before us may leave first and admit us, so no single watched node can
// tell us. Such a recipe needs a watch on the children (as Curator's
// InterProcessSemaphoreV2 keeps under its internal lock), not this engine's
// single predecessor watch. Config.Relist does not lift condition 3.
//
// If not acquired, watch must name an element of contenders other than
// ours; the engine treats anything else as a bug and fails the acquire.
type Predicate func(contenders []Contender, self int) (acquired bool, watch string)

// First is the mutual exclusion predicate (mutex; the writer of a read/write
// lock): acquired when no contender is before ours; otherwise watch the
// immediate predecessor, so that a release wakes exactly one waiter.
func First(contenders []Contender, self int) (bool, string) {
	if self == 0 {
		return true, ""
	}
	return false, contenders[self-1].Name
}

// NoneBefore returns the predicate "acquired when no contender of the given
// kind is before ours; otherwise watch the nearest one before ours". The
// reader of a read/write lock is NoneBefore("W"): readers share the lock and
// wait only for writers queued ahead of them.
func NoneBefore(kind string) Predicate {
	return func(contenders []Contender, self int) (bool, string) {
		for i := self - 1; i >= 0; i-- {
			if contenders[i].Kind == kind {
				return false, contenders[i].Name
			}
		}
		return true, ""
	}
}
