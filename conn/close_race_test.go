package conn_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestSubscribeRacingCloseAlwaysEnds: subscriptions made while Close runs
// (before, during and after it) all end: Next returns the Closed event and
// then ErrClosed, or ErrClosed at once, never waits out its deadline.
func TestSubscribeRacingCloseAlwaysEnds(t *testing.T) {
	c := zktest.New(t)
	const rounds, workers = 4, 16
	var total, hung int
	for round := 0; round < rounds; round++ {
		s := connect(t, c.Servers())
		var closed atomic.Bool
		var mu sync.Mutex
		var subs []*conn.Subscription
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// Subscribe until Close has returned, then a few more.
				for extra := 0; extra < 20; {
					sub := s.Subscribe()
					mu.Lock()
					subs = append(subs, sub)
					mu.Unlock()
					if closed.Load() {
						extra++
					}
				}
			}()
		}
		close(start)
		require.NoError(t, s.Close())
		closed.Store(true)
		wg.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		for _, sub := range subs {
			var err error
			for err == nil {
				_, err = sub.Next(ctx)
			}
			if !errors.Is(err, conn.ErrClosed) {
				hung++
			}
		}
		cancel()
		total += len(subs)
	}
	t.Logf("%d subscriptions made around Close, %d never ended", total, hung)
	assert.Zero(t, hung, "every subscription made around Close ends")
}
