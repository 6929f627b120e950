package queue

// Predicate decides, from the contenders in queue order and the index of
// ours, whether we hold the lock and, if not, which contender before ours
// to watch (anything else fails the acquire with ErrBadRecipe). Pure; it
// depends only on the contenders before ours, removing them never undoes
// "acquired", and the watched one alone keeps us out while it exists: a
// counting predicate (an N-lease semaphore) cannot be one. See
// docs/design.md, "What a predicate must satisfy".
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
