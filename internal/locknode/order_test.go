package locknode

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBefore(t *testing.T) {
	assert.True(t, Before(1, 2))
	assert.False(t, Before(2, 1))
	assert.False(t, Before(5, 5))
	assert.True(t, Before(-3, -2))
	// The counter wraps from MaxInt32 to MinInt32: the wrapped node is newer.
	assert.True(t, Before(math.MaxInt32, math.MinInt32))
	assert.False(t, Before(math.MinInt32, math.MaxInt32))
	assert.True(t, Before(math.MaxInt32-1, -2147483647))
}

// names of a mixed queue, in no particular order.
var mixed = []string{
	"_c_" + uuid1 + "-lock-0000000007",
	"hello",
	hex1 + "__lock__0000000003",
	"_c_" + hex1 + "-lock-0000000005",
	"zookeeper",
	"_c_" + uuid1 + "-lease-0000000001",
	"_c_" + uuid1 + "-lock-0000000004",
}

func TestParseSortsAndIgnoresForeignNames(t *testing.T) {
	cs := Parse(ProtectedSchema{Name: "lock"}, mixed)
	var seqs []int32
	for _, c := range cs {
		seqs = append(seqs, c.Seq)
	}
	assert.Equal(t, []int32{3, 4, 5, 7}, seqs)
}

func TestParseAcrossWrap(t *testing.T) {
	s := ProtectedSchema{Name: "lock"}
	names := []string{
		s.Prefix(uuid1) + "-2147483647", // created third
		s.Prefix(uuid1) + "2147483646",  // first
		s.Prefix(uuid1) + "-2147483648", // second
		s.Prefix(uuid1) + "2147483647",  // before the wrap
	}
	cs := Parse(s, names)
	var seqs []int32
	for _, c := range cs {
		seqs = append(seqs, c.Seq)
	}
	assert.Equal(t, []int32{2147483646, 2147483647, -2147483648, -2147483647}, seqs)
}
