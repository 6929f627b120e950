package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

func contenders(spec ...string) []locknode.Contender {
	cs := make([]locknode.Contender, len(spec))
	for i, k := range spec {
		cs[i] = locknode.Contender{Name: k + string(rune('a'+i)), Seq: int32(i), Kind: k}
	}
	return cs
}

func TestFirst(t *testing.T) {
	cs := contenders("", "", "")
	for i, want := range []struct {
		ok    bool
		watch string
	}{{true, ""}, {false, "a"}, {false, "b"}} {
		ok, watch := First.Decide(cs, i)
		assert.Equal(t, want.ok, ok, "self %d", i)
		assert.Equal(t, want.watch, watch, "self %d", i)
	}
}

func TestNoneBeforeW(t *testing.T) {
	reader := NoneBefore("W")
	tests := []struct {
		queue []string
		self  int
		ok    bool
		watch string
	}{
		{[]string{"R"}, 0, true, ""},
		{[]string{"R", "R", "R"}, 2, true, ""},         // readers share
		{[]string{"W", "R"}, 1, false, "Wa"},           // a writer ahead
		{[]string{"W", "R", "R"}, 2, false, "Wa"},      // watch the writer, not the reader
		{[]string{"R", "W", "R", "R"}, 3, false, "Wb"}, // nearest writer
		{[]string{"W", "W", "R", "R"}, 3, false, "Wb"}, // nearest of two writers
		{[]string{"R", "R", "W"}, 1, true, ""},         // writers behind us do not count
		{[]string{"X", "R"}, 1, true, ""},              // unknown kinds do not block
	}
	for _, tt := range tests {
		ok, watch := reader.Decide(contenders(tt.queue...), tt.self)
		assert.Equal(t, tt.ok, ok, "%v self %d", tt.queue, tt.self)
		assert.Equal(t, tt.watch, watch, "%v self %d", tt.queue, tt.self)
	}
	// A writer is First: it waits for its immediate predecessor, reader or not.
	ok, watch := First.Decide(contenders("W", "R", "W"), 2)
	assert.False(t, ok)
	assert.Equal(t, "Rb", watch)
}

// TestCacheMatchesRelist replays every order of departures of the
// contenders before ours and checks that deciding from the first listing
// minus the departures seen (the engine's cache) grants at exactly the
// moment a fresh listing would.
func TestCacheMatchesRelist(t *testing.T) {
	for _, spec := range [][]string{
		{"", "", "", ""},
		{"W", "R", "W", "R", "R"},
		{"R", "R", "W", "R"},
		{"W", "W", "W", "R"},
	} {
		for _, pred := range []Predicate{First, NoneBefore("W")} {
			all := contenders(spec...)
			self := len(all) - 1
			permute(self, func(order []int) {
				live := map[string]bool{}
				for _, c := range all {
					live[c.Name] = true
				}
				cache := append([]locknode.Contender(nil), all...)
				for _, gone := range order {
					// A fresh listing's view.
					var fresh []locknode.Contender
					for _, c := range all {
						if live[c.Name] {
							fresh = append(fresh, c)
						}
					}
					wantOK, _ := pred.Decide(fresh, index(fresh, all[self].Name))
					// The cache's view: watch until the watched node is gone.
					gotOK := false
					for {
						ok, watch := pred.Decide(cache, index(cache, all[self].Name))
						if ok {
							gotOK = true
							break
						}
						if live[watch] {
							break
						}
						cache = remove(cache, watch)
					}
					if gotOK != wantOK {
						t.Fatalf("%v order %v: cache says %v, fresh listing %v", spec, order, gotOK, wantOK)
					}
					if gotOK {
						return
					}
					live[all[gone].Name] = false
				}
				if ok, _ := pred.Decide(cache, index(cache, all[self].Name)); !ok {
					for _, c := range cache[:index(cache, all[self].Name)] {
						if live[c.Name] {
							t.Fatalf("%v order %v: all gone but %s in the cache", spec, order, c.Name)
						}
					}
				}
			})
		}
	}
}

// permute calls f with every permutation of 0..n-1.
func permute(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(append([]int(nil), p...))
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

// locknode.RWStatuses, with no downgrade, grants as the read/write lock's
// predicates do (NoneBefore("W") for a reader, First for a writer), on
// every queue of up to six readers and writers.
func TestRWStatusesMatchPredicates(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for bits := 0; bits < 1<<n; bits++ {
			spec := make([]string, n)
			for i := range spec {
				spec[i] = []string{"R", "W"}[bits>>i&1]
			}
			cs := contenders(spec...)
			ns := make([]locknode.RWNode, n)
			for i, c := range cs {
				ns[i] = locknode.RWNode{Contender: c, Session: int64(i + 1)}
			}
			st := locknode.RWStatuses(ns)
			for i, c := range cs {
				pred := First
				if c.Kind == "R" {
					pred = NoneBefore("W")
				}
				want, _ := pred.Decide(cs, i)
				assert.Equal(t, want, st[i] == locknode.RWHolds, "%v node %d", spec, i)
			}
		}
	}
}
