package testzk

import (
	"context"
	"testing"
	"time"
)

// Eventually waits up to d for cond, polling observable state every 10 ms,
// and fails t (Fatalf) with msg if cond does not come to hold.
func Eventually(t testing.TB, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: "+msg, append([]any{d}, args...)...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Ctx returns a context ending after d, cancelled in t.Cleanup.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
