package locknode

import (
	"slices"
	"strings"
)

// Before reports whether sequence number a comes before b: the server's
// 32-bit counter wraps to negative numbers, so they compare as serial
// numbers (RFC 1982), creation order within 2^31 changes of the parent.
func Before(a, b int32) bool { return int32(uint32(b)-uint32(a)) > 0 }

// Parse returns the children that schema recognises, in queue order.
func Parse(schema Schema, names []string) []Contender {
	cs := make([]Contender, 0, len(names))
	for _, n := range names {
		if c, ok := schema.Parse(n); ok {
			cs = append(cs, c)
		}
	}
	Sort(cs)
	return cs
}

// Sort sorts contenders in queue order.
func Sort(cs []Contender) { slices.SortStableFunc(cs, Compare) }

// Compare is queue order: by sequence number (Before), then by name.
func Compare(a, b Contender) int {
	switch {
	case a.Seq == b.Seq:
		return strings.Compare(a.Name, b.Name)
	case Before(a.Seq, b.Seq):
		return -1
	}
	return 1
}
