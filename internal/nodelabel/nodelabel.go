// Package nodelabel carries the label a caller gives its acquires
// (lock.WithLabel) in their context, to the code that writes the lock
// node's data (package queue, exclusive, semaphoremutex).
package nodelabel

import "context"

// Max is the longest label a node may carry, in bytes (lock.WithLabel).
const Max = 256

type key struct{}

// With returns a copy of ctx carrying label.
func With(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, key{}, label)
}

// From returns the label ctx carries, "" for none.
func From(ctx context.Context) string {
	s, _ := ctx.Value(key{}).(string)
	return s
}
