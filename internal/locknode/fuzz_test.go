package locknode

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Curator's LeaderLatch names, as Curator 5.4 creates them (protected
// "latch-" nodes), parse as contenders of ProtectedSchema{Name: "latch"};
// the locks' names and unprotected names do not.
func TestLatchNames(t *testing.T) {
	s := ProtectedSchema{Name: "latch"}
	tests := []struct {
		name string
		ok   bool
		seq  int32
		id   string
	}{
		{"_c_" + uuid1 + "-latch-0000000003", true, 3, uuid1},
		{"_c_" + uuid1 + "-latch--000000007", true, -7, uuid1}, // the counter wrapped
		{"_c_" + uuid1 + "-lock-0000000003", false, 0, ""},     // a mutex's node
		{"latch-0000000003", false, 0, ""},                     // unprotected
		{"_c_" + uuid1 + "-latch-", false, 0, ""},              // no number
		{"_c_not-a-uuid-latch-0000000003", false, 0, ""},
	}
	for _, tc := range tests {
		c, ok := s.Parse(tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
		if ok {
			assert.Equal(t, Contender{Name: tc.name, Seq: tc.seq, ID: tc.id}, c)
		}
	}
	assert.Equal(t, "_c_"+uuid1+"-latch-", s.Prefix(uuid1))
}

// FuzzLatchName: our own latch names parse back with their id and number,
// and a parsed name's number is the one SplitSeq finds.
func FuzzLatchName(f *testing.F) {
	f.Add("_c_"+uuid1+"-latch-0000000001", int32(1))
	f.Add("_c_"+uuid1+"-latch--2147483648", int32(-2147483648))
	f.Add("latch-0000000001", int32(0))
	f.Fuzz(func(t *testing.T, name string, seq int32) {
		s := ProtectedSchema{Name: "latch"}
		if c, ok := s.Parse(name); ok {
			_, n, sok := SplitSeq(name)
			if !sok || n != c.Seq || c.Name != name {
				t.Fatalf("%q parsed as %+v, SplitSeq %d %v", name, c, n, sok)
			}
		}
		own := s.Prefix(uuid1) + strconv.FormatInt(int64(seq), 10)
		c, ok := s.Parse(own)
		if !ok || c.ID != uuid1 || c.Seq != seq {
			t.Fatalf("own %q parsed as %+v, %v", own, c, ok)
		}
	})
}

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
