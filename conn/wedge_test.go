package conn_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// opcode returns the opcode of request frame p (int32 length, int32 xid,
// int32 opcode), or 0.
func opcode(p []byte) int32 {
	if len(p) < 12 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p[8:]))
}

// authWriteFault dials connections on which, once armed, the next write of
// a set-auth request fails: the socket is closed right before it, as when
// the server resets the connection at that moment.
type authWriteFault struct {
	armed atomic.Bool
	fired atomic.Bool
}

func (f *authWriteFault) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return authFaultConn{c, f}, nil
}

type authFaultConn struct {
	net.Conn
	f *authWriteFault
}

func (c authFaultConn) Write(p []byte) (int, error) {
	const opSetAuth = 100
	if opcode(p) == opSetAuth && c.f.armed.CompareAndSwap(true, false) {
		c.Conn.Close()
		c.f.fired.Store(true)
	}
	return c.Conn.Write(p)
}

// closeWithin closes s and reports whether Close returned within d. It
// leaves a Close that does not return running (the test has failed).
func closeWithin(s *conn.Session, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Close()
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestCredentialsResendWriteFailureKeepsSession: after a reconnect,
// go-zookeeper v1.0.4 re-sends the credentials it was given (every session
// has its own identity) before anything else, and when that write fails it
// hands the error to a response channel of capacity 1 and keeps the request
// pending: its loop then blocks forever handing the request the
// disconnect's error too (flushRequests). The zk.Conn never reconnects, the
// session is lost to the local timer, and Close waited forever for that
// loop. The wire turns a failed write into a dropped connection instead,
// so go-zookeeper reconnects and the session survives.
func TestCredentialsResendWriteFailureKeepsSession(t *testing.T) {
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	f := &authWriteFault{}
	// The proxy's address twice: go-zookeeper reconnects at once.
	addrs := append(p.Addrs(), p.Addrs()...)
	const timeout = 4 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := conn.Connect(ctx, addrs, conn.WithSessionTimeout(timeout), conn.WithDialer(f.dial))
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			assert.True(t, closeWithin(s, 30*time.Second), "Close returned")
		}
	}()
	ep := epoch(t, s)
	sub := subscribe(t, s)

	f.armed.Store(true)
	p.Cut()
	// Suspended; Reconnected (the handshake); Suspended (the credentials'
	// write failed); Reconnected; or Lost if go-zookeeper is stuck.
	deadline := time.Now().Add(3 * timeout)
	for !f.fired.Load() || s.State() != conn.Reconnected {
		ev := next(t, sub, time.Until(deadline))
		require.Contains(t, []conn.State{conn.Suspended, conn.Reconnected}, ev.State, "got %s", describe(ev))
	}
	_, _, err = connlink.Of(ep).Exists(ctx, "/")
	require.NoError(t, err, "the session survives a failed write of its credentials")
	require.NoError(t, ep.Err())

	closed = true
	require.True(t, closeWithin(s, 30*time.Second), "Close returned")
}

// blockCloseDialer dials connections whose write of a close request blocks,
// deaf to Close and deadlines, until release is closed: a dialer (see
// WithDialer) that never returns.
type blockCloseDialer struct {
	release chan struct{}
	blocked chan struct{} // closed when a close request is being held
	once    sync.Once
}

func (d *blockCloseDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return blockCloseConn{c, d}, nil
}

type blockCloseConn struct {
	net.Conn
	d *blockCloseDialer
}

func (c blockCloseConn) Write(p []byte) (int, error) {
	const opClose = -11
	if opcode(p) == opClose {
		c.d.once.Do(func() { close(c.d.blocked) })
		<-c.d.release
	}
	return c.Conn.Write(p)
}

// TestCloseIsBoundedWhenGoZookeeperIsStuck: Close returns in bounded time
// even when go-zookeeper's goroutines do not end (here its writer is stuck
// in the dialer's Write); it leaves them behind, and they end once the write
// returns.
func TestCloseIsBoundedWhenGoZookeeperIsStuck(t *testing.T) {
	c := zktest.New(t)
	d := &blockCloseDialer{release: make(chan struct{}), blocked: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := conn.Connect(ctx, c.Servers(), conn.WithDialer(d.dial), conn.WithCloseWait(2*time.Second))
	require.NoError(t, err)
	defer close(d.release) // lets go-zookeeper's goroutines end (goleak checks)
	epoch(t, s)
	start := time.Now()
	require.True(t, closeWithin(s, 20*time.Second), "Close returned although go-zookeeper's writer is stuck")
	t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	select {
	case <-d.blocked:
	default:
		t.Fatal("the close request was never written: the test did not exercise a stuck writer")
	}
}

// TestCloseDurations measures what Close's documentation promises: at
// once when the server answers the close request, or when the connection
// is already down (TestCloseIsPromptAndIdempotentWithServerDown); about a
// second when the connection is up but nothing answers (a blackhole:
// go-zookeeper waits 1 s for the close request's answer); and, with the default wait for go-zookeeper's goroutines (10 s), about
// 10 s when they are stuck (a dialer's Write that never returns), never
// more than about 13 s (10 s, plus go-zookeeper's own Close: at most 3 s).
func TestCloseDurations(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers())
	epoch(t, s)
	start := time.Now()
	require.NoError(t, s.Close())
	answered := time.Since(start)
	t.Logf("Close with the server answering: %v", answered.Round(time.Millisecond))
	assert.Less(t, answered, 500*time.Millisecond)

	p := zktest.NewProxy(t, c.Servers())
	s = connect(t, p.Addrs())
	epoch(t, s)
	p.Blackhole()
	start = time.Now()
	require.NoError(t, s.Close())
	silent := time.Since(start)
	t.Logf("Close with the server silent (blackhole): %v", silent.Round(time.Millisecond))
	assert.Less(t, silent, 2*time.Second)

	d := &blockCloseDialer{release: make(chan struct{}), blocked: make(chan struct{})}
	defer close(d.release) // lets go-zookeeper's goroutines end (goleak checks)
	s = connect(t, c.Servers(), conn.WithDialer(d.dial))
	epoch(t, s)
	start = time.Now()
	require.True(t, closeWithin(s, 20*time.Second), "Close returned although go-zookeeper's writer is stuck")
	stuck := time.Since(start)
	t.Logf("Close with go-zookeeper's writer stuck: %v", stuck.Round(time.Millisecond))
	assert.Less(t, stuck, 13*time.Second)
}
