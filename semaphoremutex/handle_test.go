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
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestHandleOwned: the Mutex is owned by the handle, not by a goroutine:
// it excludes across handles and sessions, any goroutine may release it,
// a Release of a Mutex not held is lock.ErrNotHeld, an Acquire whose
// context ends first takes nothing, and a Release on a context whose
// cancellation is dropped (context.WithoutCancel) still releases.
func TestHandleOwned(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "handle")
	ctx := testzk.Ctx(t, 60*time.Second)
	a := newMutex(t, testzk.Connect(t, c.Servers()), path)
	b := newMutex(t, testzk.Connect(t, c.Servers()), path)

	// Exclusion: a counter only one holder at a time may touch.
	var (
		wg      sync.WaitGroup
		inside  int
		entered int
		mu      sync.Mutex // guards inside and entered, for the race detector
	)
	for _, m := range []*semaphoremutex.Mutex{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Acquire(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			entered++
			assert.Equal(t, 1, inside, "two holders at once")
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
			done := make(chan error)
			go func() { done <- m.Release(ctx) }() // any goroutine may release
			assert.NoError(t, <-done)
		}()
	}
	wg.Wait()
	assert.Equal(t, 4, entered)

	assert.ErrorIs(t, a.Release(ctx), lock.ErrNotHeld, "a Mutex not held")

	// An Acquire whose context ends first takes nothing.
	_, err := a.Acquire(ctx)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = b.Acquire(short)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, b.Release(ctx), lock.ErrNotHeld)

	// A release on the acquire's context, its cancellation dropped, still
	// releases once that context ended.
	gone, cancelGone := context.WithCancel(ctx)
	require.NoError(t, a.Release(ctx))
	_, err = b.Acquire(gone)
	require.NoError(t, err)
	cancelGone()
	require.NoError(t, b.Release(context.WithoutCancel(gone)))
	assert.ErrorIs(t, b.Release(ctx), lock.ErrNotHeld)
}
