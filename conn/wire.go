package conn

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// handshake is what the server said in its connect response. go-zookeeper
// keeps the negotiated timeout and the session password to itself, and the
// session manager needs both (the local expiry timer; force-expiry in tests),
// so the wire is read as it passes.
type handshake struct {
	sessionID int64
	timeout   time.Duration
	passwd    []byte
}

// wireConn wraps one TCP connection of a zk.Conn: it records when the server
// was last heard from and decodes the connect response, the first frame the
// server sends.
type wireConn struct {
	net.Conn
	link *link

	// Only the reading goroutine (go-zookeeper's) touches these.
	head   []byte
	parsed bool

	// writes orders each Write before every Read that returns after it, as
	// TCP does in fact: a response is read after its request was written.
	// go-zookeeper v1.0.4 relies on that order without telling Go: on a
	// reconnect with watches set, its connect loop reads Conn.lastZxid for
	// the set-watches request while the new reader goroutine writes it on
	// the first response, with no synchronisation between the two. The
	// set-watches request is written after that read; a response read after
	// that write now happens after it, so neither the memory model nor the
	// race detector sees two unordered accesses there. Left open: a
	// response to a request queued before the set-watches request and read
	// before that request was written, which takes a server round trip
	// shorter than a few instructions of the sender.
	writes atomic.Uint64
}

// Write counts the write before sending it: a Read that sees the count
// happens after everything the writer did before writing.
func (w *wireConn) Write(p []byte) (int, error) {
	w.writes.Add(1)
	return w.Conn.Write(p)
}

func (w *wireConn) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	w.writes.Load() // see writes
	if n > 0 {
		w.link.lastHeard.Store(time.Now().UnixNano())
		if !w.parsed {
			w.head = append(w.head, p[:n]...)
			if hs, ok := parseConnectResponse(w.head); ok {
				w.parsed, w.head = true, nil
				w.link.setHandshake(hs)
			}
		}
	}
	return n, err
}

// parseConnectResponse decodes int32 length, int32 protocolVersion,
// int32 timeOut, int64 sessionId, buffer passwd from the start of b.
func parseConnectResponse(b []byte) (handshake, bool) {
	if len(b) < 4 {
		return handshake{}, false
	}
	n := int(binary.BigEndian.Uint32(b))
	if len(b) < 4+n || n < 20 {
		return handshake{}, false
	}
	body := b[4 : 4+n]
	hs := handshake{
		timeout:   time.Duration(int32(binary.BigEndian.Uint32(body[4:]))) * time.Millisecond,
		sessionID: int64(binary.BigEndian.Uint64(body[8:])),
	}
	plen := int(int32(binary.BigEndian.Uint32(body[16:])))
	if plen > 0 && 20+plen <= len(body) {
		hs.passwd = append([]byte(nil), body[20:20+plen]...)
	}
	return hs, true
}

// link is what the session manager knows of one zk.Conn's wire: every TCP
// connection it dialed, the last handshake, and when the server was last
// heard from. It also refuses new dials once the zk.Conn is retired, so a
// retired zk.Conn can never open a new session behind our back.
type link struct {
	dial      func(network, addr string, timeout time.Duration) (net.Conn, error)
	retired   atomic.Bool
	lastHeard atomic.Int64 // unix nanoseconds

	mu    sync.Mutex
	hs    handshake
	conns map[*wireConn]struct{} // open connections, closed by closeAll
}

func (l *link) dialer(network, addr string, timeout time.Duration) (net.Conn, error) {
	if l.retired.Load() {
		return nil, errRetired
	}
	c, err := l.dial(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	w := &wireConn{Conn: c, link: l}
	l.mu.Lock()
	if l.conns == nil {
		l.conns = make(map[*wireConn]struct{})
	}
	l.conns[w] = struct{}{}
	l.mu.Unlock()
	return &trackedConn{wireConn: w}, nil
}

// trackedConn removes itself from the link when go-zookeeper closes it.
type trackedConn struct{ *wireConn }

func (t *trackedConn) Close() error {
	t.link.mu.Lock()
	delete(t.link.conns, t.wireConn)
	t.link.mu.Unlock()
	return t.wireConn.Conn.Close()
}

func (l *link) setHandshake(hs handshake) {
	l.mu.Lock()
	l.hs = hs
	l.mu.Unlock()
}

func (l *link) handshake() handshake {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hs
}

// closeAll closes every open TCP connection, which unblocks go-zookeeper's
// reader at once instead of after its read deadline.
func (l *link) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.conns {
		w.Conn.Close()
		delete(l.conns, w)
	}
}
