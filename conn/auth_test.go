package conn_test

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// opSetAuth is ZooKeeper's opcode of an auth request.
const opSetAuth = 100

// authCutter dials through a proxy and, on the first connection, applies
// a fault (cut or blackhole) right before the first auth request goes out.
// It also reads the session id the server granted on that connection.
type authCutter struct {
	proxy     *zktest.Proxy
	blackhole bool

	mu        sync.Mutex
	dialed    bool
	fired     bool
	sessionID int64
}

func (a *authCutter) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dialed {
		return c, nil
	}
	a.dialed = true
	return &cutConn{Conn: c, a: a}, nil
}

func (a *authCutter) state() (fired bool, sessionID int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fired, a.sessionID
}

type cutConn struct {
	net.Conn
	a    *authCutter
	head []byte // the first bytes read: the connect response
}

func (c *cutConn) Write(p []byte) (int, error) {
	if len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == opSetAuth {
		c.a.mu.Lock()
		fire := !c.a.fired
		c.a.fired = true
		c.a.mu.Unlock()
		if fire && c.a.blackhole {
			c.a.proxy.Blackhole()
		} else if fire {
			c.a.proxy.Cut()
		}
	}
	return c.Conn.Write(p)
}

func (c *cutConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if len(c.head) < 20 {
		c.head = append(c.head, p[:n]...)
		if len(c.head) >= 20 {
			// int32 length, int32 protocol version, int32 timeout, int64 session id
			c.a.mu.Lock()
			c.a.sessionID = int64(binary.BigEndian.Uint64(c.head[12:20]))
			c.a.mu.Unlock()
		}
	}
	return n, err
}

// TestAuthCut: the connection is reset right as the credentials are sent.
// The session survives: go-zookeeper reconnects to it, the credentials are
// sent again, and the first epoch is that session.
func TestAuthCut(t *testing.T) {
	c := zktest.New(t)
	a := &authCutter{proxy: zktest.NewProxy(t, c.Servers())}
	s := connect(t, a.proxy.Addrs(), conn.WithDialer(a.dial), conn.WithDigestAuth("alice", "pw"),
		conn.WithSessionTimeout(4*time.Second))
	fired, sid := a.state()
	require.True(t, fired, "the cut happened during authentication")
	assert.Equal(t, sid, epoch(t, s).SessionID(), "the session granted before the cut is the first epoch")
	assert.Equal(t, conn.Connected, s.State())
}

// TestAuthBlackholed: the connection goes silent right as the credentials
// are sent, and stays so. The local timer runs while authenticating: the
// session is given up after the session timeout (no epoch was handed out,
// so no transition is sent), and once the network heals a new session
// comes.
func TestAuthBlackholed(t *testing.T) {
	c := zktest.New(t)
	a := &authCutter{proxy: zktest.NewProxy(t, c.Servers()), blackhole: true}
	core, logs := observer.New(zap.InfoLevel)
	type result struct {
		s   *conn.Session
		err error
	}
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := conn.Connect(ctx, a.proxy.Addrs(), conn.WithDialer(a.dial), conn.WithDigestAuth("alice", "pw"),
			conn.WithSessionTimeout(2*time.Second), conn.WithLogger(zap.New(core)))
		res <- result{s, err}
	}()
	timedOut := func() bool {
		for _, e := range logs.All() {
			if strings.Contains(e.Message, "disconnected for the session timeout") {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(20 * time.Second)
	for !timedOut() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	fired, sid := a.state()
	require.True(t, fired, "the blackhole began during authentication")
	require.True(t, timedOut(), "the local timer ended the session cut off while authenticating")
	a.proxy.Heal()
	r := <-res
	require.NoError(t, r.err)
	defer r.s.Close()
	assert.NotEqual(t, sid, epoch(t, r.s).SessionID(), "a new session")
	for _, e := range logs.All() {
		assert.NotContains(t, e.Message, "sending credentials failed", "the cut session is not abandoned on the auth error")
	}
}

// TestAuthRefusedBacksOff: a server that refuses digest credentials
// (answers AUTHFAILED and closes the connection) must not get a storm of
// new sessions: the session backs off between attempts, and the refusal
// is what Connect reports (ErrAuthFailed), not only a timeout.
func TestAuthRefusedBacksOff(t *testing.T) {
	c := zktest.New(t, zktest.WithoutDigestAuth())
	var mu sync.Mutex
	var dials []time.Time
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		dials = append(dials, time.Now())
		mu.Unlock()
		return net.DialTimeout(network, addr, timeout)
	}
	const window = 4 * time.Second
	start := time.Now()
	wctx, wcancel := context.WithTimeout(context.Background(), window)
	defer wcancel()
	s, err := conn.Connect(wctx, c.Servers(), conn.WithDialer(dial), conn.WithSessionTimeout(4*time.Second))
	if s != nil {
		s.Close()
	}
	elapsed := time.Since(start)
	require.Error(t, err)
	mu.Lock()
	n := len(dials)
	mu.Unlock()
	t.Logf("connections in %v: %d; Connect: %v", elapsed.Round(time.Millisecond), n, err)
	assert.ErrorIs(t, err, conn.ErrAuthFailed, "the refusal is visible")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// Backoff of 250ms doubling (jitter: half to all of it): at most
	// 0, 0.25, 0.75, 1.75, 3.75 s: 5 sessions in 4 s; allow one more dial
	// of go-zookeeper's own before a connection is retired.
	assert.LessOrEqual(t, n, 8, "no storm of new sessions")

	// Without the counting dialer too, Connect's error says why there is
	// no session.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err = conn.Connect(ctx, c.Servers(), conn.WithSessionTimeout(4*time.Second))
	if s != nil {
		s.Close()
	}
	t.Logf("Connect with a 2 s ctx: %v", err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, conn.ErrAuthFailed)
}
