package conn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// TestPathErrors: the path checks that conn and the recipes share refuse
// with conn's own error and say what is wrong.
func TestPathErrors(t *testing.T) {
	for _, tc := range []struct{ path, says string }{
		{"rel", "is relative"},
		{"/zookeeper/quota", "path /zookeeper/quota is reserved"},
	} {
		err := zkpath.Validate(tc.path)
		if !errors.Is(err, conn.ErrInvalidArgument) {
			t.Errorf("Validate(%q) = %v, want a match for conn.ErrInvalidArgument", tc.path, err)
		} else if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Validate(%q) = %q: the error should say %q", tc.path, err, tc.says)
		}
	}
}
