package conn_test

import (
	"context"
	"runtime"
	"strings"
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
// (before, during and after it) all end: the channel gives the Closed event
// and is closed, or is closed at once, never waits out its deadline.
// Nothing comes after Closed.
func TestSubscribeRacingCloseAlwaysEnds(t *testing.T) {
	c := zktest.New(t)
	const rounds, workers = 4, 16
	var total, hung, after int
	for round := 0; round < rounds; round++ {
		s := connect(t, c.Servers())
		var closed atomic.Bool
		var mu sync.Mutex
		var subs []<-chan conn.Event
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// Subscribe until Close has returned, then a few more.
				for extra := 0; extra < 20; {
					sub := s.Subscribe(context.Background())
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
			closed := false
		drain:
			for {
				select {
				case ev, ok := <-sub:
					if !ok {
						break drain
					}
					if closed {
						after++
					}
					closed = ev.State == conn.Closed
				case <-ctx.Done():
					hung++
					break drain
				}
			}
		}
		cancel()
		total += len(subs)
	}
	t.Logf("%d subscriptions made around Close, %d never ended", total, hung)
	assert.Zero(t, hung, "every subscription made around Close ends")
	assert.Zero(t, after, "an event after Closed")
}

// TestSubscribeEndsWithContext: once ctx ends, the channel is closed and its
// goroutine and queue are released, whether its events were read or are
// still queued; the session and other subscriptions carry on.
func TestSubscribeEndsWithContext(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	s := connect(t, p.Addrs(), conn.WithSessionTimeout(8*time.Second))
	waitUntil(t, 5*time.Second, "earlier tests' subscriptions ending", func() bool { return pumps() == 0 })
	ctx, cancel := context.WithCancel(context.Background())
	const n = 20
	subs := make([]<-chan conn.Event, n)
	for i := range subs {
		subs[i] = s.Subscribe(ctx)
	}
	live := subscribe(t, s)
	p.Cut() // Suspended and Reconnected queue in every subscription
	expect(t, live, 10*time.Second, conn.Suspended)
	expect(t, live, 20*time.Second, conn.Reconnected)
	for _, sub := range subs[:n/2] { // the other half stays unread
		expect(t, sub, time.Second, conn.Suspended)
		expect(t, sub, time.Second, conn.Reconnected)
	}
	assert.Equal(t, n+1, pumps(), "one goroutine per subscription")

	cancel()
	waitUntil(t, 5*time.Second, "the goroutines of the cancelled subscriptions ending", func() bool { return pumps() == 1 })
	for i, sub := range subs {
		_, ok := <-sub
		assert.False(t, ok, "subscription %d not closed", i)
	}
	p.Cut()
	expect(t, live, 10*time.Second, conn.Suspended)
	expect(t, live, 20*time.Second, conn.Reconnected)
}

// pumps counts the goroutines that feed subscriptions.
func pumps() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "conn.(*Session).pump(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
