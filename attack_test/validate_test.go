package attack_test

import (
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
)

// TestProbe_ValidatePathEdges checks conn.ValidatePath (go doc ./conn
// ValidatePath): "not empty, starting with "/", no trailing "/" (except the
// root), no empty, "." or ".." segment, no NUL or other character the server
// rejects. Paths in the /zookeeper tree are refused with ErrReservedPath."
// on the edges: a sibling of /zookeeper whose name starts with it is not in
// its tree; "..." and ".x" are ordinary names.
func TestProbe_ValidatePathEdges(t *testing.T) {
	ok := []string{"/", "/zookeeperx", "/zookeeper-locks/a", "/a/...", "/a/.x", "/a/x..", "/a b", "/ü"}
	for _, p := range ok {
		if err := conn.ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	reserved := []string{"/zookeeper", "/zookeeper/quota", "/zookeeper/config"}
	for _, p := range reserved {
		if err := conn.ValidatePath(p); !errors.Is(err, conn.ErrReservedPath) {
			t.Errorf("ValidatePath(%q) = %v, want ErrReservedPath", p, err)
		}
	}
	bad := []string{"", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/a/.", "/a\x00b", "/a\u0001b", "/a\ufffeb", "/a\u007fb", "/a\u0085b", "/a\ue000b"}
	for _, p := range bad {
		if err := conn.ValidatePath(p); !errors.Is(err, conn.ErrInvalidPath) {
			t.Errorf("ValidatePath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}
