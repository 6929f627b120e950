package conn

import (
	"fmt"
	"strings"
)

// ValidatePath checks that p is an absolute ZooKeeper path the server will
// accept: not empty, starting with "/", no trailing "/" (except the root),
// no empty, "." or ".." segment, no NUL or other character the server
// rejects. Paths in the /zookeeper tree are refused with ErrReservedPath.
// Every other failure matches ErrInvalidPath.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrInvalidPath)
	case p[0] != '/':
		return fmt.Errorf("%w: %q is relative (must start with /)", ErrInvalidPath, p)
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%w: %q ends with /", ErrInvalidPath, p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty segment (//)", ErrInvalidPath, p)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidPath, p, seg)
		}
	}
	for i, r := range p {
		if r == 0 {
			return fmt.Errorf("%w: %q has a NUL at byte %d", ErrInvalidPath, p, i)
		}
		if badRune(r) {
			return fmt.Errorf("%w: %q has the character %U at byte %d, which ZooKeeper rejects", ErrInvalidPath, p, r, i)
		}
	}
	if p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
		return fmt.Errorf("%w: %q", ErrReservedPath, p)
	}
	return nil
}

// badRune: the characters ZooKeeper's PathUtils.validatePath refuses.
func badRune(r rune) bool {
	return r > 0 && r < 0x20 ||
		r >= 0x7f && r <= 0x9f ||
		r >= 0xd800 && r <= 0xf8ff ||
		r >= 0xfff0 && r <= 0xffff // includes U+FFFD, what invalid UTF-8 decodes to
}

// JoinPath joins a parent path and a child name.
func JoinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

// ParentPath returns the parent of an absolute path ("/" for "/a").
func ParentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// BaseName returns the last segment of a path.
func BaseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
