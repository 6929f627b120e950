package bg

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type ctxKey struct{}

// GraceContext ends Grace after its parent's deadline, Grace after its
// parent is cancelled, or at its limit, and keeps the parent's values.
func TestGraceContext(t *testing.T) {
	t.Run("Deadline", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "v"), 50*time.Millisecond)
		defer cancel()
		c, stop := GraceContext(parent, time.Minute)
		defer stop()
		assert.Equal(t, "v", c.Value(ctxKey{}))
		d, ok := c.Deadline()
		pd, _ := parent.Deadline()
		assert.True(t, ok)
		assert.Equal(t, pd.Add(Grace), d)
		<-parent.Done()
		assert.NoError(t, c.Err(), "alive when its parent ends")
		<-c.Done()
		assert.GreaterOrEqual(t, time.Since(pd), Grace)
	})
	t.Run("Cancel", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		c, stop := GraceContext(parent, time.Minute)
		defer stop()
		cancel()
		at := time.Now()
		assert.NoError(t, c.Err(), "alive right after its parent is cancelled")
		<-c.Done()
		assert.GreaterOrEqual(t, time.Since(at), Grace)
	})
	t.Run("Limit", func(t *testing.T) {
		c, stop := GraceContext(context.Background(), 20*time.Millisecond)
		defer stop()
		<-c.Done()
		assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
	})
	t.Run("Stop", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, stop := GraceContext(parent, time.Minute)
		stop()
		assert.ErrorIs(t, c.Err(), context.Canceled)
		cancel() // the AfterFunc was stopped: nothing is left running (goleak)
	})
}
