package conn_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestCloseWithContainerCreatesInFlight: the session is closed while
// container creates (CreateParents) are on the wire. go-zookeeper v1.0.4's
// CreateContainer reads its response struct after giving up on Close, while
// its reader may still decode the late answer into it: conn must not let
// that answer reach the reader (see link.closing). Run under -race.
func TestCloseWithContainerCreatesInFlight(t *testing.T) {
	const rounds, workers = 4, 16
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	p.SetLatency(20 * time.Millisecond) // answers are still on their way at Close
	for round := 0; round < rounds; round++ {
		s, err := conn.Connect(context.Background(), p.Addrs())
		require.NoError(t, err)
		ep := epoch(t, s)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ep.Err() == nil; i++ {
					_ = connlink.Of(ep).CreateParents(context.Background(), fmt.Sprintf("%s/inflight-%d/%d-%d/x", c.Root(), round, w, i))
				}
			}()
		}
		time.Sleep(100 * time.Millisecond) // creates pile up on the wire; no race is hidden by it
		require.NoError(t, s.Close())
		wg.Wait()
	}
}
