package queue

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// sim is one session's waiters on one queue, deciding with the engine's
// pure parts (shrink, forget, handOver, fromView and the session's
// listings) while contenders leave in random order, checked against a
// fresh listing at every step.
type sim struct {
	t      *testing.T
	rng    *rand.Rand
	pred   Predicate
	all    []locknode.Contender
	live   map[string]bool
	ours   map[string]bool
	ls     *listings
	ep     *conn.Epoch
	as     map[string]*attempt // our waiters, by node
	watch  map[string]string   // what each of our waiters watches
	lists  int                 // listings the waiters sent after their first
	recall float64             // chance that the answer to a delete of ours is recorded
}

func (s *sim) fresh() []locknode.Contender {
	cs := make([]locknode.Contender, 0, len(s.all))
	for _, c := range s.all {
		if s.live[c.Name] {
			cs = append(cs, c)
		}
	}
	return cs
}

// list is a listing: the waiter's cache, and the session's view.
func (s *sim) list(a *attempt) {
	cs := s.fresh()
	a.listed(cs)
	s.ls.install(s.ep, cs)
	s.lists++
}

// settle runs waiter a's decisions until it waits on a node that is
// there, or is granted.
func (s *sim) settle(a *attempt) {
	for {
		self := index(a.cs, a.node)
		if self < 0 {
			s.t.Fatalf("%s: not in its cache %v", a.node, a.cs)
		}
		ok, watch := s.pred.Decide(a.cs, self)
		if ok && a.part {
			if !a.fromView() {
				s.list(a)
			}
			continue
		}
		if ok {
			fresh := s.fresh()
			if want, _ := s.pred.Decide(fresh, index(fresh, a.node)); !want {
				s.t.Fatalf("%s granted while a listing would not grant: %v", a.node, fresh)
			}
			delete(s.as, a.node)
			delete(s.watch, a.node)
			return
		}
		w := index(a.cs, watch)
		if w < 0 || w >= self {
			s.t.Fatalf("%s: watch %q not before ours in %v", a.node, watch, a.cs)
		}
		a.shrink(self, w)
		if !s.live[watch] { // GetW answers NoNode
			s.gone(a, watch, false)
			continue
		}
		s.watch[a.node] = watch
		return
	}
}

// gone is attempt.gone with the listing simulated.
func (s *sim) gone(a *attempt, name string, told bool) {
	a.ls.left(a.ep, name)
	if told {
		a.unsure()
	}
	if a.forget(name) && !a.fromView() {
		s.list(a)
	}
}

// leave deletes contender name: holder says whether it held the lock by
// First (nothing before it is left), which it may tell its watcher with
// the handover mark.
func (s *sim) leave(name string) {
	holder := true
	for _, c := range s.all {
		if c.Name == name {
			break
		}
		holder = holder && !s.live[c.Name]
	}
	s.live[name] = false
	if s.ours[name] && s.rng.Float64() < s.recall {
		s.ls.left(s.ep, name) // our delete's answer
	}
	delete(s.as, name) // a waiter of ours that gave up
	delete(s.watch, name)
	var woken []string
	for node, w := range s.watch {
		if w == name {
			woken = append(woken, node)
		}
	}
	for _, node := range woken {
		a := s.as[node]
		delete(s.watch, node)
		if holder && s.rng.IntN(2) == 0 {
			a.handOver(name)
			s.gone(a, name, false)
		} else {
			s.gone(a, name, true)
		}
		s.settle(a)
	}
}

// check fails the test if a waiter waits on a node that has left, or
// while a listing would grant it.
func (s *sim) check(round int) {
	fresh := s.fresh()
	for node, w := range s.watch {
		if grants, _ := s.pred.Decide(fresh, index(fresh, node)); !s.live[w] || grants {
			s.t.Fatalf("round %d: %s waits on %s (there: %v), a listing grants: %v", round, node, w, s.live[w], grants)
		}
	}
}

// TestViewDecidesAsAListing: waiters of one session, among foreign
// contenders, decide after plain deletions from the session's view of the
// queue (what its latest listing showed, less what the session learnt has
// left) instead of listing again; every grant is one a fresh listing
// gives, every node waited on still blocks, and no waiter is left waiting
// once a listing would grant it. When the session's own nodes are all the
// queue and leave in order (a drain), no waiter lists again at all, however
// long the queue.
func TestViewDecidesAsAListing(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 4))
	for round := range 2000 {
		n := 2 + rng.IntN(12)
		if round%3 == 0 {
			n = maxCopy - 3 + rng.IntN(2*maxCopy)
		}
		drain := round%5 == 0
		pred, schema, mixed := First, locknode.HostKindSchema{Host: "h", Kind: "W"}, true
		switch {
		case drain || round%4 == 0:
			mixed = false
		case round%4 == 1:
			pred = NoneBefore("W")
		case round%4 == 2:
			pred = firstW
		}
		s := &sim{t: t, rng: rng, pred: pred, live: map[string]bool{}, ours: map[string]bool{},
			ls: &listings{key: listingsKey{schema: schema}}, ep: &conn.Epoch{},
			as: map[string]*attempt{}, watch: map[string]string{}, recall: 0.8}
		if drain {
			s.recall = 1
		}
		for i := range n {
			kind := "W"
			if mixed && rng.IntN(2) == 0 {
				kind = "R"
			}
			c, _ := schema.Parse(fmt.Sprintf("h-%s-%010d", kind, i))
			s.all = append(s.all, c)
			s.live[c.Name] = true
			s.ours[c.Name] = drain || rng.IntN(3) > 0
		}
		// The view: the latest round's listing, which may be older than
		// some waiters' creates (then it does not show them).
		shown := n
		if !drain && rng.IntN(2) == 0 {
			shown = rng.IntN(n)
		}
		s.ls.install(s.ep, s.all[:shown])
		q := &Queue{cfg: Config{Schema: schema, Predicate: pred}}
		first := s.fresh() // one listing, shared, answered after every create
		for _, c := range s.all {
			if !s.ours[c.Name] {
				continue
			}
			a := &attempt{q: q, ep: s.ep, ls: s.ls, node: c.Name}
			a.listed(first)
			s.as[c.Name] = a
			s.settle(a)
		}
		s.check(round)
		s.lists = 0
		order := rng.Perm(n)
		if drain {
			order = nil
			for i := range n {
				order = append(order, i)
			}
		}
		for _, i := range order {
			s.leave(s.all[i].Name)
			s.check(round)
		}
		if len(s.as) > 0 {
			t.Fatalf("round %d: %d waiters never granted", round, len(s.as))
		}
		if drain && s.lists > 0 {
			t.Fatalf("round %d: a drain of %d listed %d times", round, n, s.lists)
		}
	}
}
