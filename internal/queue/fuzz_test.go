package queue

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseName checks, for any child name: parsing never panics; a name
// SplitSeq accepts is its head followed by the decimal text of its number;
// a contender of either schema carries the name and the number SplitSeq
// finds; and our own names always parse back.
func FuzzParseName(f *testing.F) {
	for _, n := range mixed {
		f.Add(n)
	}
	f.Add("host-W--2147483648")
	f.Add("_c_" + uuid1 + "-lock--000000001")
	f.Fuzz(func(t *testing.T, name string) {
		head, seq, ok := SplitSeq(name)
		if ok {
			rest, found := strings.CutPrefix(name, head)
			if !found {
				t.Fatalf("%q: head %q is not a prefix", name, head)
			}
			v, err := strconv.ParseInt(rest, 10, 32)
			if err != nil || int32(v) != seq {
				t.Fatalf("%q: tail %q is not %d (%v)", name, rest, seq, err)
			}
		}
		for _, s := range []Schema{ProtectedSchema{Name: "lock"}, HostKindSchema{Host: "h", Kind: "W"}} {
			c, cok := s.Parse(name)
			if !cok {
				continue
			}
			if !ok || c.Name != name || c.Seq != seq {
				t.Fatalf("%q: %T parsed %+v, SplitSeq (%q, %d, %v)", name, s, c, head, seq, ok)
			}
		}
		// Our own names, whatever the number, parse back.
		for _, s := range []Schema{ProtectedSchema{Name: "lock"}, HostKindSchema{Host: "h-" + strconv.Itoa(len(name)), Kind: "R"}} {
			own := s.Prefix(uuid1) + strconv.FormatInt(int64(int32(len(name)*7919-1<<30)), 10)
			if _, ok := s.Parse(own); !ok {
				t.Fatalf("%T does not parse its own %q", s, own)
			}
		}
	})
}

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
		cs := make([]Contender, len(kinds))
		for i := range kinds {
			k := "R"
			if kinds[i]%2 == 1 {
				k = "W"
			}
			cs[i] = Contender{Name: k + strconv.Itoa(i), Seq: int32(i), Kind: k}
		}
		if self < 0 {
			self = -self
		}
		self %= len(cs)
		for name, pred := range map[string]Predicate{"First": First, "NoneBefore(W)": NoneBefore("W")} {
			ok, watch := pred(cs, self)
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
