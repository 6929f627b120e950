package conn_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
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

// slowMultiDialer dials TCP connections whose writes of multi requests take
// 2 ms longer: after a reconnect, go-zookeeper writes the requests queued
// while it was disconnected before its set-watches request, and the answers
// to the first ones come back while it is still writing the others. The
// race does not depend on this delay (nothing orders the two accesses); the
// delay only makes the detector see both in most reconnects.
func slowMultiDialer(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return slowMultiConn{c}, nil
}

type slowMultiConn struct{ net.Conn }

func (c slowMultiConn) Write(p []byte) (int, error) {
	const opMulti = 14
	if len(p) >= 12 && binary.BigEndian.Uint32(p[8:]) == opMulti {
		time.Sleep(2 * time.Millisecond)
	}
	return c.Conn.Write(p)
}

// TestReconnectWithWatchesIsRaceFree is the reproducer of go-zookeeper
// v1.0.4's lastZxid race (see wire.go): the connection is reset many times
// while watches are set and requests are in flight, so that on every
// reconnect go-zookeeper re-sends the watches (reading Conn.lastZxid) while
// responses to the requests queued across the reconnect arrive (its reader
// writes Conn.lastZxid). Run under -race. Afterwards every watch still
// fires once. Each cut waits until the connection has written its
// set-watches request: without the wire's zxid rewrite, the detector then
// reports the race 12–13 times a run (4 runs of 4, 20 cuts); cut at once,
// before go-zookeeper has re-sent its credentials, a connection carries no
// answer and only the last one races (3 runs of 6, 40 cuts, 48 workers).
//
// One session throughout: go-zookeeper reconnects at once after each cut,
// so the session is lost only if it does not reconnect within the session
// timeout (20 s, the most a tickTime of 1 s allows, to leave a loaded
// machine room): then a reconnect hung (as go-zookeeper's loop did when a
// failed write wedged it, see writeFailConn), and the test fails with the
// Lost event.
func TestReconnectWithWatchesIsRaceFree(t *testing.T) {
	const watches, workers, cuts = 100, 16, 20
	const timeout = 20 * time.Second
	c := zktest.New(t, zktest.WithTickTime(time.Second))
	p := zktest.NewProxy(t, c.Servers())
	// The proxy's address twice: go-zookeeper then reconnects at once to
	// the "next" server instead of pausing a second after a full round.
	addrs := append(p.Addrs(), p.Addrs()...)
	s := connect(t, addrs, conn.WithSessionTimeout(timeout), conn.WithDialer(slowMultiDialer))
	ep := epoch(t, s)
	require.Equal(t, timeout, connlink.Of(ep).Timeout(), "negotiated session timeout")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := c.Root() + "/reconnect-watches"
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, root+"/x"))
	events := make([]<-chan zk.Event, watches)
	for i := range events {
		path := fmt.Sprintf("%s/n%03d", root, i)
		_, err := connlink.Of(ep).Create(ctx, path, nil, zk.FlagPersistent, connlink.Of(s).ACL())
		require.NoError(t, err)
		_, _, events[i], err = connlink.Of(ep).GetW(ctx, path)
		require.NoError(t, err)
	}

	// Requests that are never retried by conn (Multi), so that callers
	// queue new ones while the connection is down and go-zookeeper writes
	// them the moment it is back, ahead of the set-watches request.
	stopWorkers := startMultiWorkers(t, ep, workers, root)

	sub := subscribe(t, s)
	for i := 0; i < cuts; i++ {
		p.Cut()
		expect(t, sub, 10*time.Second, conn.Suspended)
		// Longer than the session timeout: a reconnect that hangs shows
		// as Lost, not as a missing event.
		expect(t, sub, timeout+10*time.Second, conn.Reconnected)
		// Cut only once this connection has written its set-watches
		// request, behind the multis queued while it was down, whose
		// answers race with it: a connection cut at once, before
		// go-zookeeper has re-sent its credentials, carries no answer.
		require.Eventually(t, func() bool { return conn.SetWatchesSent(s) > int64(i) }, timeout, time.Millisecond,
			"reconnect %d: the set-watches request is written", i)
	}
	stopWorkers()
	require.NoError(t, ep.Err(), "one session throughout")
	t.Logf("%d reconnects, %d set-watches requests written", cuts, conn.SetWatchesSent(s))

	// The watches survived every reconnect: each fires once on a change.
	for i := range events {
		_, err := connlink.Of(ep).Set(ctx, fmt.Sprintf("%s/n%03d", root, i), []byte("x"), 0)
		require.NoError(t, err)
	}
	for i, ch := range events {
		select {
		case ev := <-ch:
			assert.Equal(t, zk.EventNodeDataChanged, ev.Type, "watch %d", i)
		case <-ctx.Done():
			t.Fatalf("watch %d did not fire", i)
		}
	}
}

// TestWatchFiresForAChangeMadeWhileCutOff: a node watched before a cut and
// changed by someone else during it fires the watch after the reconnect,
// although requests queued across the reconnect are answered (with newer
// zxids) before go-zookeeper's set-watches request is written. The
// set-watches request must carry the last zxid read before the cut: one
// read on the new connection would tell the server the client has seen the
// change, and the server would drop the event.
func TestWatchFiresForAChangeMadeWhileCutOff(t *testing.T) {
	const rounds, workers = 5, 16
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	addrs := append(p.Addrs(), p.Addrs()...)
	s := connect(t, addrs, conn.WithSessionTimeout(10*time.Second), conn.WithDialer(slowMultiDialer))
	other := connect(t, c.Servers())
	ep, oep := epoch(t, s), epoch(t, other)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := c.Root() + "/changed-while-cut/node"
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, path))
	_, err := connlink.Of(ep).Create(ctx, path, nil, zk.FlagPersistent, connlink.Of(s).ACL())
	require.NoError(t, err)

	startMultiWorkers(t, ep, workers, path)

	sub := subscribe(t, s)
	for i := 0; i < rounds; i++ {
		_, _, ch, err := connlink.Of(ep).GetW(ctx, path)
		require.NoError(t, err)
		p.Blackhole() // new connections stay silent until Heal
		p.Cut()
		expect(t, sub, 10*time.Second, conn.Suspended)
		_, err = connlink.Of(oep).Set(ctx, path, []byte{byte(i)}, -1)
		require.NoError(t, err)
		p.Heal()
		expect(t, sub, 10*time.Second, conn.Reconnected)
		select {
		case ev := <-ch:
			assert.Equal(t, zk.EventNodeDataChanged, ev.Type, "round %d", i)
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the watch set before the cut did not fire for the change made during it", i)
		}
	}
}

// startMultiWorkers starts n goroutines sending check multis on path through
// ep until the returned stop is called, the test ends (a cleanup registered
// now runs before the session's, made earlier, is closed: a failed
// requirement cannot leave them running) or ep ends (a Multi on an ended
// epoch fails at once: they would spin). stop waits for them; it may be
// called more than once.
func startMultiWorkers(t *testing.T, ep *conn.Epoch, n int, path string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && ep.Err() == nil {
				_, _ = connlink.Of(ep).Multi(ctx, &zk.CheckVersionRequest{Path: path, Version: -1})
			}
		}()
	}
	stop = func() {
		cancel()
		wg.Wait()
	}
	t.Cleanup(stop)
	return stop
}
