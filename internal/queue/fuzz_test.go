package queue

import (
	"strconv"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// FuzzDecide checks the predicates on any queue: the answer is "acquired" or
// names a contender before ours to watch, and it agrees with the
// definition.
func FuzzDecide(f *testing.F) {
	f.Add("RWRRW", 3)
	f.Add("WWWW", 0)
	f.Add("RRRR", 3)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, kinds string, self int) {
		if len(kinds) == 0 || len(kinds) > 64 {
			return
		}
		cs := make([]locknode.Contender, len(kinds))
		for i := range kinds {
			k := "R"
			if kinds[i]%2 == 1 {
				k = "W"
			}
			cs[i] = locknode.Contender{Name: k + strconv.Itoa(i), Seq: int32(i), Kind: k}
		}
		if self < 0 {
			self = -self
		}
		self %= len(cs)
		for name, pred := range map[string]Predicate{"First": First, "NoneBefore(W)": NoneBefore("W")} {
			ok, watch := pred.Decide(cs, self)
			w := index(cs, watch)
			if !ok && (w < 0 || w >= self) {
				t.Fatalf("%s(%v, %d) watches %q", name, kinds, self, watch)
			}
			blocked := false
			for _, c := range cs[:self] {
				blocked = blocked || name == "First" || c.Kind == "W"
			}
			if ok == blocked {
				t.Fatalf("%s(%v, %d) = %v", name, kinds, self, ok)
			}
		}
	})
}
