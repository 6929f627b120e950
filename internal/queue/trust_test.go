package queue

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// TestSoleWriter: a data change is trusted as a release only on a node
// whose ACL lets one digest identity, and nothing else, change its data
// or its ACL.
func TestSoleWriter(t *testing.T) {
	readers := zk.WorldACL(zk.PermRead | zk.PermCreate | zk.PermDelete)
	us := zk.DigestACL(zk.PermAll, "zkrecipes-a", "pw")
	cat := func(acls ...[]zk.ACL) []zk.ACL {
		var out []zk.ACL
		for _, a := range acls {
			out = append(out, a...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		acl  []zk.ACL
		want bool
	}{
		{"sealed", cat(readers, us), true},
		{"only the identity", us, true},
		{"world-writable", zk.WorldACL(zk.PermAll), false},
		{"world may write", cat(zk.WorldACL(zk.PermRead|zk.PermWrite), us), false},
		{"world is admin", cat(zk.WorldACL(zk.PermRead|zk.PermAdmin), us), false},
		{"second writer", cat(readers, us, zk.DigestACL(zk.PermWrite, "other", "pw")), false},
		{"second admin", cat(readers, us, zk.DigestACL(zk.PermAdmin, "other", "pw")), false},
		{"ip writer", cat(readers, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}}), false},
		{"nobody writes", readers, false},
		{"empty", nil, false},
	} {
		assert.Equal(t, tc.want, soleWriter(tc.acl), tc.name)
	}
}
