package queue

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// TestShrunkCacheDecidesAsAListing replays random departures (plain
// deletions, and handovers by holders granted by First) before a waiter
// that keeps only what shrink keeps, on queues shorter and longer than
// maxCopy, and checks it against a fresh listing at every step: a grant
// without a listing is a grant the listing gives; a node it waits on
// still blocks it; once every contender before it has gone it is granted.
// It also checks that the cache stays small while waiting.
func TestShrunkCacheDecidesAsAListing(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	for round := range 3000 {
		n := 2 + rng.IntN(8)
		if round%3 == 0 {
			n = maxCopy - 3 + rng.IntN(2*maxCopy)
		}
		kinds := make([]string, n)
		for i := range kinds {
			kinds[i] = []string{"R", "W"}[rng.IntN(2)]
		}
		mutex := round%2 == 0
		pred := NoneBefore("W")
		if round%4 == 1 {
			pred = firstW
		}
		if mutex {
			pred = First
			for i := range kinds {
				kinds[i] = ""
			}
		}
		all := contenders(kinds...)
		me := all[n-1].Name
		live := map[string]bool{}
		for _, c := range all {
			live[c.Name] = true
		}
		fresh := func() []locknode.Contender {
			var cs []locknode.Contender
			for _, c := range all {
				if live[c.Name] {
					cs = append(cs, c)
				}
			}
			return cs
		}
		a := &attempt{q: &Queue{cfg: Config{Predicate: pred}}, node: me}
		a.listed(fresh())
		order := rng.Perm(n - 1)
		listings := 0
		spec := strings.Join(kinds, "")
		for step := 0; ; {
			self := index(a.cs, me)
			ok, watch := pred.Decide(a.cs, self)
			if ok && a.part {
				a.listed(fresh())
				listings++
				continue
			}
			if ok {
				if want, _ := pred.Decide(fresh(), len(fresh())-1); !want {
					t.Fatalf("%q order %v step %d: granted while a listing would not grant", spec, order, step)
				}
				break
			}
			w := index(a.cs, watch)
			if w < 0 || w >= self {
				t.Fatalf("%q: watch %q not before ours in %v", spec, watch, a.cs)
			}
			a.shrink(self, w)
			if len(a.cs) > 3 {
				t.Fatalf("%q: waiting with %d contenders cached", spec, len(a.cs))
			}
			if !live[watch] { // GetW answers NoNode
				if a.forget(watch) {
					a.listed(fresh())
					listings++
				}
				continue
			}
			if blocked, _ := pred.Decide(fresh(), len(fresh())-1); blocked {
				t.Fatalf("%q order %v: waiting on %s, but a listing grants", spec, order, watch)
			}
			// Contenders leave until the watched one does.
			for live[watch] {
				g := all[order[step]].Name
				step++
				holder := true // granted by First: nothing before it is left
				for _, c := range all {
					if c.Name == g {
						break
					}
					holder = holder && !live[c.Name]
				}
				live[g] = false
				if g != watch {
					continue
				}
				if holder && rng.IntN(2) == 0 {
					a.handOver(g)
				}
				if a.forget(g) {
					a.listed(fresh())
					listings++
				}
			}
		}
		if listings > n {
			t.Fatalf("%q: %d listings", spec, listings)
		}
	}
}

// firstW is NoneBefore("W") watching the first writer in the queue instead
// of the nearest: it meets Predicate's conditions, and a handover of the
// watched writer does not always grant (other writers may follow it).
var firstW = Predicate{Decide: func(cs []locknode.Contender, self int) (bool, string) {
	for _, c := range cs[:self] {
		if c.Kind == "W" {
			return false, c.Name
		}
	}
	return true, ""
}}
