package zkpath_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		path string
		says string // what the error says is wrong; "" for a valid path
	}{
		{"/", ""},
		{"/a", ""},
		{"/a/b-c_d.e", ""},
		{"/zookeeperish", ""},
		{"/a/..b", ""},
		{"", "empty path"},
		{"a/b", "is relative"},
		{"/a/", "ends with /"},
		{"/a//b", "empty segment"},
		{"//", "ends with /"},
		{"/a/./b", `"." segment`},
		{"/a/../b", `".." segment`},
		{"/..", `".." segment`},
		{"/a\x00b", "NUL at byte 2"},
		{"/a\x01b", "U+0001 at byte 2"},
		{"/a\x7fb", "U+007F at byte 2"},
		{"/a\xffb", "U+FFFD at byte 2"},
		{"/a\uffffb", "U+FFFF at byte 2"},
		{"/zookeeper", "path /zookeeper is reserved"},
		{"/zookeeper/quota", "path /zookeeper/quota is reserved"},
	} {
		err := zkpath.Validate(tc.path)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("Validate(%q) = %v, want nil", tc.path, err)
		case tc.says != "" && !errors.Is(err, zkpath.ErrInvalid):
			t.Errorf("Validate(%q) = %v, want ErrInvalid", tc.path, err)
		case tc.says != "" && !strings.Contains(err.Error(), tc.says):
			t.Errorf("Validate(%q) = %q: the error should say %q", tc.path, err, tc.says)
		}
	}
}

func TestPathHelpers(t *testing.T) {
	if got := zkpath.Join("/", "a"); got != "/a" {
		t.Errorf("Join(/, a) = %q", got)
	}
	if got := zkpath.Join("/a", "b"); got != "/a/b" {
		t.Errorf("Join(/a, b) = %q", got)
	}
	if got := zkpath.Parent("/a/b"); got != "/a" {
		t.Errorf("Parent(/a/b) = %q", got)
	}
	if got := zkpath.Parent("/a"); got != "/" {
		t.Errorf("Parent(/a) = %q", got)
	}
	if got := zkpath.Base("/a/b"); got != "b" {
		t.Errorf("Base(/a/b) = %q", got)
	}
}
