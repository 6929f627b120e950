// Package zkpath checks and takes apart absolute ZooKeeper paths.
package zkpath

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is the error of Validate, exported as conn.ErrInvalidArgument.
var ErrInvalid = errors.New("conn: invalid argument")

// Validate checks that p is an absolute path the server will accept,
// outside its /zookeeper tree; its errors match ErrInvalid.
func Validate(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path: %w", ErrInvalid)
	case p[0] != '/':
		return fmt.Errorf("path %q is relative (must start with /): %w", p, ErrInvalid)
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("path %q ends with /: %w", p, ErrInvalid)
	}
	for seg, rest, more := "", p[1:], true; more; {
		seg, rest, more = strings.Cut(rest, "/")
		switch seg {
		case "":
			return fmt.Errorf("path %q has an empty segment (//): %w", p, ErrInvalid)
		case ".", "..":
			return fmt.Errorf("path %q has a %q segment: %w", p, seg, ErrInvalid)
		}
	}
	for i, r := range p {
		if r == 0 {
			return fmt.Errorf("path %q has a NUL at byte %d: %w", p, i, ErrInvalid)
		}
		if badRune(r) {
			return fmt.Errorf("path %q has the character %U at byte %d, which ZooKeeper rejects: %w", p, r, i, ErrInvalid)
		}
	}
	if p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
		return fmt.Errorf("path %s is reserved (the server's /zookeeper tree): %w", p, ErrInvalid)
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

// Join joins a parent path and a child name.
func Join(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

// Parent returns the parent of an absolute path ("/" for "/a").
func Parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Base returns the last segment of a path.
func Base(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
