package queue

import (
	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// Predicate is a recipe's decision: from the contenders in queue order and
// the index of ours, whether we hold the lock and, if not, which contender
// before ours to watch. Decide is pure and must meet docs/design.md, "What
// a predicate must satisfy": a counting predicate cannot.
type Predicate struct {
	Decide func(contenders []locknode.Contender, self int) (acquired bool, watch string)
	first  bool // First's: a holder's release can hand over (ReleaseOps)
}

// First is the mutual exclusion predicate: acquired when first; otherwise
// watch the predecessor, so that a release wakes exactly one waiter. Its
// releases leave the handover mark (see Queue.Release).
var First = Predicate{Decide: first, first: true}

func first(contenders []locknode.Contender, self int) (bool, string) {
	if self == 0 {
		return true, ""
	}
	return false, contenders[self-1].Name
}

// NoneBefore returns the predicate "acquired when no contender of kind is
// before ours; otherwise watch the nearest one" (a reader: NoneBefore("W")).
func NoneBefore(kind string) Predicate {
	return Predicate{Decide: func(contenders []locknode.Contender, self int) (bool, string) {
		for i := self - 1; i >= 0; i-- {
			if contenders[i].Kind == kind {
				return false, contenders[i].Name
			}
		}
		return true, ""
	}}
}
