// Package nodelabel carries the label a caller gives its acquires
// (lock.WithLabel) in their context, to the code that writes the lock
// node's data (package queue, exclusive, semaphoremutex).
package nodelabel

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Max is the longest label a node may carry, in bytes (lock.WithLabel).
const Max = 256

type key struct{}

// With returns a copy of ctx carrying label.
func With(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, key{}, label)
}

// From returns the label ctx carries ("" for none), or an error matching
// conn.ErrInvalidArgument when it is not one a node may carry.
func From(ctx context.Context) (string, error) {
	s, _ := ctx.Value(key{}).(string)
	switch {
	case len(s) > Max:
		return "", fmt.Errorf("label is %d bytes, at most %d: %w", len(s), Max, conn.ErrInvalidArgument)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("label is not valid UTF-8: %w", conn.ErrInvalidArgument)
	case strings.ContainsFunc(s, unicode.IsControl):
		return "", fmt.Errorf("label %q holds control characters: %w", s, conn.ErrInvalidArgument)
	}
	return s, nil
}
