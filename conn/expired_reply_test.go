package conn_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// errSessionExpiredCode is ZooKeeper's SESSIONEXPIRED error code.
const errSessionExpiredCode = -112

// expiringProxy forwards connections to one server and, when armed,
// answers the next request itself with a bare "session expired" reply
// header, as a server does for a connection whose session was closed under
// it (by another connection of the session) while the connection lives.
type expiringProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func startExpiringProxy(t *testing.T, target string) *expiringProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &expiringProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *expiringProxy) addr() string { return p.ln.Addr().String() }

func (p *expiringProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *expiringProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { // server to client: frames pass unchanged
			defer p.wg.Done()
			defer c.Close()
			_, _ = io.Copy(c, s)
		}()
		go func() { // client to server: an armed proxy answers one request itself
			defer p.wg.Done()
			defer s.Close()
			p.clientToServer(c, s)
		}()
	}
}

// clientToServer copies frames from the client to the server. The first
// frame is the connect request. Afterwards, when armed, a request (not a
// ping, xid -2) is not forwarded; the client gets a reply header with its
// xid and the SESSIONEXPIRED code instead.
func (p *expiringProxy) clientToServer(c, s net.Conn) {
	first := true
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if !first && len(body) >= 8 {
			xid := int32(binary.BigEndian.Uint32(body))
			if xid > 0 && p.armed.CompareAndSwap(true, false) {
				reply := make([]byte, 4+16)
				binary.BigEndian.PutUint32(reply, 16)
				binary.BigEndian.PutUint32(reply[4:], uint32(xid))
				// zxid (8 bytes) left 0
				code := int32(errSessionExpiredCode)
				binary.BigEndian.PutUint32(reply[16:], uint32(code))
				if _, err := c.Write(reply); err != nil {
					return
				}
				continue
			}
		}
		first = false
		if _, err := s.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

// TestRequestAnsweredSessionExpiredEndsEpoch: a request answered "session
// expired" while the connection lives is an expiry confirmed by the
// server: the epoch ends (Lost), the error matches ErrEpochEnded and
// ErrSessionExpired besides zk.ErrSessionExpired, and a new session
// begins. Before, the connection lived on (pings still answered), every
// request failed, and nothing ended the epoch.
func TestRequestAnsweredSessionExpiredEndsEpoch(t *testing.T) {
	c := zktest.New(t)
	p := startExpiringProxy(t, c.Servers()[0])
	// No quorum timer: the proxy answers whichever request comes next,
	// which must be the Get below, not one of the timer's syncs.
	s := connect(t, []string{p.addr()}, conn.WithSessionTimeout(4*time.Second), conn.WithLastHeardTimer())
	sub := subscribe(t, s)
	ep := epoch(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	p.armed.Store(true)
	begin := time.Now()
	_, _, err := connlink.Of(ep).Get(ctx, "/")
	assert.ErrorIs(t, err, zk.ErrSessionExpired)
	assert.ErrorIs(t, err, conn.ErrEpochEnded)
	assert.ErrorIs(t, err, conn.ErrSessionExpired)
	assert.Less(t, time.Since(begin), 5*time.Second, "at once, not after the session timeout")
	assert.ErrorIs(t, ep.Err(), conn.ErrSessionExpired)

	// The first session's Connected may come first: Connect returns as
	// soon as the epoch is live, just before the transition is sent.
	for {
		ev := next(t, sub, 10*time.Second)
		if ev.State == conn.Connected && ev.Epoch == ep {
			continue
		}
		require.Equal(t, conn.Lost, ev.State, "got %s", describe(ev))
		assert.ErrorIs(t, ev.Err, conn.ErrSessionExpired)
		break
	}
	expect(t, sub, 30*time.Second, conn.Connected)
	ep2 := epoch(t, s)
	assert.NotEqual(t, ep.SessionID(), ep2.SessionID(), "a new session")
	_, _, err = connlink.Of(ep2).Get(ctx, "/")
	assert.NoError(t, err)
}
