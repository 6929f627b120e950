package semaphoremutex_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
)

// panicErr runs f and returns the error it panicked with (nil if none).
func panicErr(t *testing.T, f func()) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			require.True(t, ok, "panicked with a %T, not an error: %v", r, r)
			err = e
		}
	}()
	f()
	return nil
}

// TestLocker: the sync.Locker adapter excludes across handles and
// sessions, unlocks from any goroutine, and panics with the error when it
// cannot do what it was asked.
func TestLocker(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "locker")
	ctx := testzk.Ctx(t, 60*time.Second)
	a := newMutex(t, testzk.Connect(t, c.Servers()), path).Locker(ctx)
	bm := newMutex(t, testzk.Connect(t, c.Servers()), path)
	b := bm.Locker(ctx)

	// Exclusion: a counter only one holder at a time may touch.
	var (
		wg      sync.WaitGroup
		inside  int
		entered int
		mu      sync.Mutex // guards inside and entered, for the race detector
	)
	for _, l := range []sync.Locker{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Lock()
			mu.Lock()
			inside++
			entered++
			assert.Equal(t, 1, inside, "two holders at once")
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
			done := make(chan struct{})
			go func() { defer close(done); l.Unlock() }() // any goroutine may unlock
			<-done
		}()
	}
	wg.Wait()
	assert.Equal(t, 4, entered)

	// Unlock of a Mutex not held panics, like sync.Mutex.
	err := panicErr(t, a.Unlock)
	assert.ErrorIs(t, err, lock.ErrNotHeld)

	// Lock whose context ends first panics with the context's error, and
	// takes nothing.
	a.Lock()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err = panicErr(t, bm.Locker(short).Lock)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, bm.IsAcquired())

	// Unlock after the adapter's context ended still releases.
	gone, cancelGone := context.WithCancel(ctx)
	g := bm.Locker(gone)
	a.Unlock()
	g.Lock()
	cancelGone()
	require.NoError(t, panicErr(t, g.Unlock))
	assert.False(t, bm.IsAcquired())
}
