package conn_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// busy runs requests of every kind on ep from several goroutines, each with
// a context that may end mid-request, until stop is closed.
func busy(ep *conn.Epoch, path string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*100*time.Microsecond)
				switch (g + i) % 7 {
				case 0:
					connlink.Of(ep).GetW(ctx, path)
				case 1:
					connlink.Of(ep).ExistsW(ctx, path+"/none")
				case 2:
					connlink.Of(ep).Children(ctx, path)
				case 3:
					connlink.Of(ep).CreateParents(ctx, path+"/p/q")
				case 4:
					connlink.Of(ep).Multi(ctx, &zk.CheckVersionRequest{Path: path, Version: -1})
				case 5:
					connlink.Of(ep).Sync(ctx, path)
				case 6:
					connlink.Of(ep).Exists(ctx, path)
				}
				cancel()
			}
		}()
	}
	return &wg
}

// TestRequestsInFlightWhenTheEpochEnds: requests in flight (and callers
// giving up on them) while the epoch ends by expiry or by Close.
func TestRequestsInFlightWhenTheEpochEnds(t *testing.T) {
	c := zktest.New(t)
	for round := 0; round < 6; round++ {
		s, err := conn.Connect(context.Background(), c.Servers(), conn.WithSessionTimeout(4*time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		ep := epoch(t, s)
		path := c.Root() + fmt.Sprintf("/inflight-%d", round)
		require.NoError(t, connlink.Of(ep).CreateParents(context.Background(), path+"/x"))
		stop := make(chan struct{})
		wg := busy(ep, path, stop)
		// Runs before the Close above if a requirement below fails: the
		// workers would spin on the ended epoch.
		stopBusy := sync.OnceFunc(func() { close(stop); wg.Wait() })
		t.Cleanup(stopBusy)
		time.Sleep(20 * time.Millisecond) // let requests pile up; no race is hidden by it
		if round%2 == 0 {
			require.NoError(t, zktest.ExpireEpoch(context.Background(), c.Servers()[0], ep))
			select {
			case <-ep.Done():
			case <-time.After(20 * time.Second):
				t.Fatal("epoch not ended after expiry")
			}
		}
		s.Close()
		stopBusy()
		assert.ErrorIs(t, ep.Err(), conn.ErrEpochEnded)
	}
}

// TestLostArmedAcrossExpiry: Lost is called (arming the node watch) before
// the session is expired.
func TestLostArmedAcrossExpiry(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	for round := 0; round < 5; round++ {
		ep := epoch(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		path := c.Root() + fmt.Sprintf("/lost-%d", round)
		require.NoError(t, connlink.Of(ep).CreateParents(ctx, path))
		_, err := connlink.Of(ep).Create(ctx, path, nil, zk.FlagEphemeral, connlink.Of(s).ACL())
		require.NoError(t, err)
		l := ep.NewLease(path)
		before := connlink.Of(s).Stats().WatchesSet
		lost := l.Lost()
		for connlink.Of(s).Stats().WatchesSet == before {
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
		select {
		case <-lost:
		case <-ctx.Done():
			t.Fatal("lease not lost after expiry")
		}
		assert.ErrorIs(t, l.Err(), conn.ErrSessionExpired)
		cancel()
	}
}
