package conn_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/conn"
)

// FuzzValidatePath checks, for any string: ValidatePath never panics and
// either accepts it or refuses it with ErrInvalidArgument;
// an accepted path is absolute, valid UTF-8, and round-trips through the
// path helpers: its parent is accepted too, JoinPath(ParentPath(p),
// BaseName(p)) gives p back, and a child joined under it is accepted and
// has p as its parent.
func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{
		"/", "/a", "/a/b", "/a/b-c_d.e", "/zookeeperish", "/a/..b", "/_c_x-lock-0000000001",
		"", "rel", "a/b", "/a/", "//", "/a//b", "/a/./b", "/a/../b", "/..", "/a\x00b",
		"/a\x01b", "/a\x7fb", "/a\xffb", "/a\uffffb", "/\ud7ff", "/zookeeper", "/zookeeper/x",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := conn.ValidatePath(p)
		if err != nil {
			if !errors.Is(err, conn.ErrInvalidArgument) {
				t.Fatalf("ValidatePath(%q) = %v: does not match ErrInvalidArgument", p, err)
			}
			return
		}
		if !strings.HasPrefix(p, "/") || !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
			t.Fatalf("ValidatePath accepted %q", p)
		}
		if p == "/" {
			if got := conn.JoinPath(p, "x"); got != "/x" || conn.ParentPath(got) != "/" {
				t.Fatalf("JoinPath(/, x) = %q, parent %q", got, conn.ParentPath(got))
			}
			return
		}
		parent, base := conn.ParentPath(p), conn.BaseName(p)
		if perr := conn.ValidatePath(parent); perr != nil {
			t.Fatalf("ValidatePath accepted %q but refuses its parent %q: %v", p, parent, perr)
		}
		if base == "" || strings.Contains(base, "/") {
			t.Fatalf("BaseName(%q) = %q", p, base)
		}
		if got := conn.JoinPath(parent, base); got != p {
			t.Fatalf("JoinPath(ParentPath(%q), BaseName(%q)) = %q", p, p, got)
		}
		child := conn.JoinPath(p, "x")
		if cerr := conn.ValidatePath(child); cerr != nil {
			t.Fatalf("ValidatePath accepted %q but refuses its child %q: %v", p, child, cerr)
		}
		if got := conn.ParentPath(child); got != p {
			t.Fatalf("ParentPath(%q) = %q, want %q", child, got, p)
		}
	})
}
