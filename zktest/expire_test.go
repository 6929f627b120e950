package zktest_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// passwordCatcher is a zk.Dialer that remembers the session password from the
// first frame the server sends: the ConnectResponse (int32 length, int32
// protocolVersion, int32 timeOut, int64 sessionId, int32 passwd length,
// passwd).
type passwordCatcher struct {
	mu     sync.Mutex
	passwd []byte
}

func (pc *passwordCatcher) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &catchingConn{Conn: c, pc: pc}, nil
}

func (pc *passwordCatcher) password() []byte {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return append([]byte(nil), pc.passwd...)
}

type catchingConn struct {
	net.Conn
	pc   *passwordCatcher
	buf  []byte // the first bytes read, until the first frame is complete
	done bool
}

func (c *catchingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done {
		c.buf = append(c.buf, p[:n]...)
		if len(c.buf) >= 4 && len(c.buf) >= 4+int(binary.BigEndian.Uint32(c.buf)) {
			c.done = true
			frame := c.buf[4:]
			if len(frame) >= 20 {
				pwLen := int(binary.BigEndian.Uint32(frame[16:20]))
				if len(frame) >= 20+pwLen {
					c.pc.mu.Lock()
					c.pc.passwd = append([]byte(nil), frame[20:20+pwLen]...)
					c.pc.mu.Unlock()
				}
			}
		}
	}
	return n, err
}

func TestExpireSession(t *testing.T) {
	c := anyCluster(t)
	direct, _ := connect(t, c.Servers(), 4*time.Second, nil)
	if _, err := direct.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	var pc passwordCatcher
	conn, ev := connect(t, c.Servers(), 10*time.Second, pc.dial)
	eph := c.Root() + "/ephemeral"
	if _, err := conn.Create(eph, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sid, passwd := conn.SessionID(), pc.password()
	if len(passwd) == 0 {
		t.Fatal("no session password captured")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begin := time.Now()
	if err := zktest.ExpireSession(ctx, c.Servers()[0], sid, passwd); err != nil {
		t.Fatal(err)
	}
	t.Logf("ExpireSession took %v", time.Since(begin).Round(time.Millisecond))
	// The close is committed when ExpireSession returns.
	if ok, _, err := direct.Exists(eph); err != nil || ok {
		t.Fatalf("ephemeral node after ExpireSession: exists = %v, %v; want gone", ok, err)
	}
	ev.waitFor(t, zk.StateExpired, 1, 10*time.Second)

	err := zktest.ExpireSession(ctx, c.Servers()[0], sid, passwd)
	if !errors.Is(err, zktest.ErrExpire) {
		t.Fatalf("ExpireSession of an expired session = %v, want ErrExpire", err)
	}
}

func TestExpireSessionWrongPassword(t *testing.T) {
	c := anyCluster(t)
	conn, _ := connect(t, c.Servers(), 10*time.Second, nil)
	err := zktest.ExpireSession(context.Background(), c.Servers()[0], conn.SessionID(), make([]byte, 16))
	if !errors.Is(err, zktest.ErrExpire) {
		t.Fatalf("ExpireSession with a wrong password = %v, want ErrExpire", err)
	}
}
