package queue

import (
	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// Predicate decides, from the contenders in queue order and the index of
// ours, whether we hold the lock and, if not, which contender before ours
// to watch. Pure, and it must meet docs/design.md, "What a predicate must
// satisfy": a counting predicate cannot.
type Predicate func(contenders []locknode.Contender, self int) (acquired bool, watch string)

// First is the mutual exclusion predicate: acquired when first; otherwise
// watch the predecessor, so that a release wakes exactly one waiter.
func First(contenders []locknode.Contender, self int) (bool, string) {
	if self == 0 {
		return true, ""
	}
	return false, contenders[self-1].Name
}

// NoneBefore returns the predicate "acquired when no contender of kind is
// before ours; otherwise watch the nearest one" (a reader: NoneBefore("W")).
func NoneBefore(kind string) Predicate {
	return func(contenders []locknode.Contender, self int) (bool, string) {
		for i := self - 1; i >= 0; i-- {
			if contenders[i].Kind == kind {
				return false, contenders[i].Name
			}
		}
		return true, ""
	}
}
