package conn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
)

func TestValidatePath(t *testing.T) {
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
		err := conn.ValidatePath(tc.path)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("ValidatePath(%q) = %v, want nil", tc.path, err)
		case tc.says != "" && !errors.Is(err, conn.ErrInvalidArgument):
			t.Errorf("ValidatePath(%q) = %v, want ErrInvalidArgument", tc.path, err)
		case tc.says != "" && !strings.Contains(err.Error(), tc.says):
			t.Errorf("ValidatePath(%q) = %q: the error should say %q", tc.path, err, tc.says)
		}
	}
}

func TestPathHelpers(t *testing.T) {
	if got := conn.JoinPath("/", "a"); got != "/a" {
		t.Errorf("JoinPath(/, a) = %q", got)
	}
	if got := conn.JoinPath("/a", "b"); got != "/a/b" {
		t.Errorf("JoinPath(/a, b) = %q", got)
	}
	if got := conn.ParentPath("/a/b"); got != "/a" {
		t.Errorf("ParentPath(/a/b) = %q", got)
	}
	if got := conn.ParentPath("/a"); got != "/" {
		t.Errorf("ParentPath(/a) = %q", got)
	}
	if got := conn.BaseName("/a/b"); got != "b" {
		t.Errorf("BaseName(/a/b) = %q", got)
	}
}
