package zkpath_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// FuzzValidate checks, for any string: Validate never panics and either
// accepts it or refuses it with ErrInvalid; an accepted path is absolute,
// valid UTF-8, and round-trips through the path helpers: its parent is
// accepted too, Join(Parent(p), Base(p)) gives p back, and a child joined
// under it is accepted and has p as its parent.
func FuzzValidate(f *testing.F) {
	for _, p := range []string{
		"/", "/a", "/a/b", "/a/b-c_d.e", "/zookeeperish", "/a/..b", "/_c_x-lock-0000000001",
		"", "rel", "a/b", "/a/", "//", "/a//b", "/a/./b", "/a/../b", "/..", "/a\x00b",
		"/a\x01b", "/a\x7fb", "/a\xffb", "/a\uffffb", "/\ud7ff", "/zookeeper", "/zookeeper/x",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := zkpath.Validate(p)
		if err != nil {
			if !errors.Is(err, zkpath.ErrInvalid) {
				t.Fatalf("Validate(%q) = %v: does not match ErrInvalid", p, err)
			}
			return
		}
		if !strings.HasPrefix(p, "/") || !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
			t.Fatalf("Validate accepted %q", p)
		}
		if p == "/" {
			if got := zkpath.Join(p, "x"); got != "/x" || zkpath.Parent(got) != "/" {
				t.Fatalf("Join(/, x) = %q, parent %q", got, zkpath.Parent(got))
			}
			return
		}
		parent, base := zkpath.Parent(p), zkpath.Base(p)
		if perr := zkpath.Validate(parent); perr != nil {
			t.Fatalf("Validate accepted %q but refuses its parent %q: %v", p, parent, perr)
		}
		if base == "" || strings.Contains(base, "/") {
			t.Fatalf("Base(%q) = %q", p, base)
		}
		if got := zkpath.Join(parent, base); got != p {
			t.Fatalf("Join(Parent(%q), Base(%q)) = %q", p, p, got)
		}
		child := zkpath.Join(p, "x")
		if cerr := zkpath.Validate(child); cerr != nil {
			t.Fatalf("Validate accepted %q but refuses its child %q: %v", p, child, cerr)
		}
		if got := zkpath.Parent(child); got != p {
			t.Fatalf("Parent(%q) = %q, want %q", child, got, p)
		}
	})
}
