package locknode

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const (
	uuid1 = "3f2a6c1e-9b7d-4e21-8c3a-0d5f7b9e1a24"
	hex1  = "9f86d081884c7d659a2feaa0c55ad015"
)

func TestSplitSeq(t *testing.T) {
	tests := []struct {
		name string
		head string
		seq  int32
		ok   bool
	}{
		{"lock-0000000001", "lock-", 1, true},
		{"lock-0000000000", "lock-", 0, true},
		{"lock-2147483647", "lock-", 2147483647, true},
		{"lock--2147483648", "lock-", -2147483648, true}, // wrapped: %010d of MinInt32
		{"lock--000000001", "lock-", -1, true},
		{"__lock__0000000042", "__lock__", 42, true},
		{"__lock__-000000042", "__lock__", -42, true},
		{"host-with-dash-W-0000000007", "host-with-dash-W-", 7, true},
		{"a-R--000000003", "a-R-", -3, true},
		{"x7", "x", 7, true},
		{"lock-2147483648", "", 0, false},  // beyond int32
		{"lock--2147483649", "", 0, false}, // beyond int32
		{"lock-12345678901", "", 0, false}, // 11 digits
		{"lock-", "", 0, false},            // no digits
		{"hello", "", 0, false},            // no digits
		{"", "", 0, false},                 // empty
		{"0000000001", "", 1, true},        // digits only
		{"a-5", "a-", 5, true},             // '-' after a letter is a separator
		{"-5", "-", 5, true},               // nothing before the '-': separator
		{"lock-00000000x1", "lock-00000000x", 1, true},
	}
	for _, tt := range tests {
		head, seq, ok := SplitSeq(tt.name)
		assert.Equal(t, tt.ok, ok, tt.name)
		if tt.ok {
			assert.Equal(t, tt.head, head, tt.name)
			assert.Equal(t, tt.seq, seq, tt.name)
		}
	}
}

func TestProtectedSchemaParse(t *testing.T) {
	s := ProtectedSchema{Name: "lock"}
	tests := []struct {
		name string
		ok   bool
		seq  int32
		id   string
	}{
		{"_c_" + uuid1 + "-lock-0000000001", true, 1, uuid1},            // Curator, ours
		{"_c_" + uuid1 + "-lock--000000005", true, -5, uuid1},           // wrapped counter
		{"_c_" + uuid1 + "-lock--2147483648", true, -2147483648, uuid1}, // wrapped counter
		{"_c_" + hex1 + "-lock-0000000002", true, 2, hex1},              // go-zookeeper
		{hex1 + "__lock__0000000003", true, 3, hex1},                    // kazoo
		{"_c_" + "3F2A6C1E-9B7D-4E21-8C3A-0D5F7B9E1A24" + "-lock-1", true, 1, "3F2A6C1E-9B7D-4E21-8C3A-0D5F7B9E1A24"},
		{"hello", false, 0, ""},
		{"lock-0000000001", false, 0, ""},                                          // unprotected
		{"_c_" + uuid1 + "-lease-0000000001", false, 0, ""},                        // other recipe
		{"_c_" + uuid1 + "-lock-", false, 0, ""},                                   // no sequence
		{"_c_" + uuid1[:35] + "-lock-0000000001", false, 0, ""},                    // short uuid
		{"_c_" + hex1[:31] + "g-lock-0000000001", false, 0, ""},                    // not hex
		{hex1 + "__rlock__0000000003", false, 0, ""},                               // kazoo read lock
		{hex1[:31] + "__lock__0000000003", false, 0, ""},                           // short kazoo id
		{"host-W-0000000001", false, 0, ""},                                        // rwlock
		{"_c_" + uuid1 + "-lock-2147483648", false, 0, ""},                         // beyond int32
		{"_c_" + uuid1 + "-lock-0000000001-x", false, 0, ""},                       // trailing junk
		{"_c_" + uuid1 + "-lock-0000000001\x00", false, 0, ""},                     // trailing junk
		{"_c_" + uuid1 + "_lock_0000000001", false, 0, ""},                         // wrong separators
		{"_c_" + "3f2a6c1e-9b7d-4e21-8c3a_0d5f7b9e1a24" + "-lock-1", false, 0, ""}, // bad uuid form
	}
	for _, tt := range tests {
		c, ok := s.Parse(tt.name)
		assert.Equal(t, tt.ok, ok, tt.name)
		if tt.ok {
			assert.Equal(t, Contender{Name: tt.name, Seq: tt.seq, ID: tt.id}, c, tt.name)
		}
	}
	assert.Equal(t, "_c_"+uuid1+"-lock-", s.Prefix(uuid1))
	c, ok := s.Parse(s.Prefix(uuid1) + "0000000009")
	assert.True(t, ok, "the schema recognises its own names")
	assert.Equal(t, uuid1, c.ID)
}

func TestHostKindSchemaParse(t *testing.T) {
	s := HostKindSchema{Host: "web-1.example-com", Kind: "R"}
	tests := []struct {
		name string
		ok   bool
		seq  int32
		kind string
	}{
		{"web-1.example-com-R-0000000001", true, 1, "R"},
		{"web-1.example-com-W-0000000002", true, 2, "W"},
		{"h-W--000000002", true, -2, "W"},
		{"a-W-R-0000000003", true, 3, "R"}, // host "a-W"
		{"a--W-0000000004", true, 4, "W"},  // host "a-"
		{"-W-0000000001", false, 0, ""},    // no host
		{"h-X-0000000001", false, 0, ""},
		{"h-RW-0000000001", false, 0, ""},
		{"h-R0000000001", false, 0, ""},
		{"_c_" + uuid1 + "-lock-0000000001", false, 0, ""},
		{"hello", false, 0, ""},
	}
	for _, tt := range tests {
		c, ok := s.Parse(tt.name)
		assert.Equal(t, tt.ok, ok, tt.name)
		if tt.ok {
			assert.Equal(t, Contender{Name: tt.name, Seq: tt.seq, Kind: tt.kind}, c, tt.name)
		}
	}
	assert.Equal(t, "web-1.example-com-R-", s.Prefix(uuid1))
}

func TestDecodeData(t *testing.T) {
	d, ok := DecodeData(EncodeData(uuid1, "", true, ""))
	assert.True(t, ok)
	assert.True(t, d.Sealed)
	assert.Equal(t, uuid1, d.ID)
	assert.Equal(t, Hostname(), d.Host)
	assert.NotZero(t, d.PID)

	d, ok = DecodeData([]byte("10.0.0.7")) // Curator's default: the client's IP
	assert.True(t, ok)
	assert.Equal(t, NodeData{Host: "10.0.0.7"}, d)

	for _, b := range [][]byte{nil, {}, []byte("  "), {0, 1, 2}, []byte("{}"), []byte("\xff\xfe")} {
		_, ok := DecodeData(b)
		assert.False(t, ok, "%q", b)
	}
}
