package queue

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// Config.Data replaces the engine's node data; it needs a schema that
// names nodes by their acquire id.
func TestConfigData(t *testing.T) {
	c := cluster(t)
	s := connect(t, c.Servers())
	path := lockPath(t, c)
	_, err := New(s, path, Config{Schema: HostKindSchema{Host: "h", Kind: "W"}, Decide: First, Data: []byte("x")})
	assert.ErrorIs(t, err, ErrBadRecipe)

	q, err := New(s, path, Config{Schema: ProtectedSchema{Name: "latch"}, Decide: First, Data: []byte("participant-1")})
	require.NoError(t, err)
	ctx := ctxTimeout(t, 30*time.Second)
	l, err := q.Acquire(ctx)
	require.NoError(t, err)
	b, _, err := s.Get(ctx, l.Path())
	require.NoError(t, err)
	assert.Equal(t, "participant-1", string(b))
	require.NoError(t, q.Release(ctx, l))
}
