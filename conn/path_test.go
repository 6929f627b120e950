package conn_test

import (
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
)

func TestValidatePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want error
	}{
		{"/", nil},
		{"/a", nil},
		{"/a/b-c_d.e", nil},
		{"/zookeeperish", nil},
		{"/a/..b", nil},
		{"", conn.ErrInvalidPath},
		{"a/b", conn.ErrInvalidPath},
		{"/a/", conn.ErrInvalidPath},
		{"/a//b", conn.ErrInvalidPath},
		{"//", conn.ErrInvalidPath},
		{"/a/./b", conn.ErrInvalidPath},
		{"/a/../b", conn.ErrInvalidPath},
		{"/..", conn.ErrInvalidPath},
		{"/a\x00b", conn.ErrInvalidPath},
		{"/a\x01b", conn.ErrInvalidPath},
		{"/a\x7fb", conn.ErrInvalidPath},
		{"/a\xffb", conn.ErrInvalidPath},
		{"/a\uffffb", conn.ErrInvalidPath},
		{"/zookeeper", conn.ErrReservedPath},
		{"/zookeeper/quota", conn.ErrReservedPath},
	} {
		err := conn.ValidatePath(tc.path)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("ValidatePath(%q) = %v, want %v", tc.path, err, tc.want)
		}
		if err != nil && err.Error() == tc.want.Error() {
			t.Errorf("ValidatePath(%q) = %q: the error should say what is wrong with the path", tc.path, err)
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
