package queue

import (
	"slices"

	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// index returns the position of the contender named name, or -1.
func index(cs []locknode.Contender, name string) int {
	for i, c := range cs {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// remove returns cs without name: a new slice, since cs may be shared.
func remove(cs []locknode.Contender, name string) []locknode.Contender {
	if i := index(cs, name); i >= 0 {
		return slices.Concat(cs[:i], cs[i+1:])
	}
	return cs
}
