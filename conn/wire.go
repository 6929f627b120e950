package conn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// handshake is the connect response, which go-zookeeper keeps to itself.
type handshake struct {
	sessionID int64
	timeout   time.Duration
	passwd    []byte
	sent      int64 // when its connect request was written (unix ns)
}

// wireConn is one TCP connection of a zk.Conn: it hands go-zookeeper's
// reader whole frames in order, responses with zxid 0 so that its racy
// Conn.lastZxid is never written (see docs/design.md, "The last zxid").
type wireConn struct {
	net.Conn // a writeFailConn: its writes never fail
	link     *link
	addr     string // the server as go-zookeeper named it

	// Filled by readAhead, emptied by Read.
	rmu   sync.Mutex
	rcond sync.Cond // on rmu: a frame or the error came in
	ready [][]byte  // whole frames for go-zookeeper, in order
	rerr  error     // the network's read error, returned once ready is empty

	// Only go-zookeeper's reading goroutine touches these.
	out    []byte // the frame being handed to the reader
	parsed bool   // the connect response has been read
	handed bool   // a frame was handed over whole; the reader is busy with it

	outHandshake bool // out is the connect response (read by go-zookeeper's connect loop)

	sentConnect bool         // the connect request has been written (under link.wmu)
	connectAt   atomic.Int64 // when (unix ns)
	relZxid     atomic.Int64 // the link's last zxid when this connection's handshake was read
	answered    atomic.Bool  // the connect response has been read
}

const (
	opCreate          = 1
	opCreate2         = 15
	opRemoveWatches   = 18
	opCreateContainer = 19
	opCreateTTL       = 21
	opSetWatches      = 101
	opClose           = -11
)

// Write passes one frame on, whole under link.wmu, after the queued
// removeWatches, with our last zxid in connect and set-watches requests.
func (w *wireConn) Write(p []byte) (int, error) {
	w.link.wmu.Lock()
	defer w.link.wmu.Unlock()
	if len(p) < 4 || int64(binary.BigEndian.Uint32(p))+4 != int64(len(p)) {
		w.link.stats.splitWrites.Add(1) // not one whole frame: see CheckWire
	}
	var op int32 // int32 length, int32 xid, int32 opcode, ...
	if len(p) >= 12 {
		op = int32(binary.BigEndian.Uint32(p[8:]))
	}
	if w.sentConnect {
		w.flushLocked()
	}
	defer w.link.creates.wrote(op)
	switch {
	case !w.sentConnect:
		// int32 length, int32 protocolVersion, int64 lastZxidSeen, ...
		w.sentConnect = true
		w.connectAt.Store(time.Now().UnixNano())
		w.link.connectSent.Store(w.connectAt.Load())
		w.boundHandshake()
		if len(p) >= 16 {
			q := append([]byte(nil), p...)
			binary.BigEndian.PutUint64(q[8:], uint64(w.link.lastZxid.Load()))
			return w.Conn.Write(q)
		}
	case op == opClose:
		w.link.closeXid.Store(int64(int32(binary.BigEndian.Uint32(p[4:]))) + 1)
		defer w.link.closeSentOnce.Do(func() { close(w.link.closeSent) })
	case op == opSetWatches && len(p) >= 20:
		// int32 length, int32 xid, int32 opcode, int64 relativeZxid, ...
		q := w.link.filterSetWatches(p)
		if len(q) == len(p) { // p itself: nothing dropped
			q = append([]byte(nil), p...)
		}
		binary.BigEndian.PutUint64(q[12:], uint64(w.relZxid.Load()))
		w.link.stats.setWatchesSent.Add(1)
		w.Conn.Write(q)
		return len(p), nil
	}
	return w.Conn.Write(p)
}

// Read hands over the next frame, in as many Reads as the reader asks for.
func (w *wireConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if w.handed {
		w.handed = false
		w.link.readerBack() // done with the last frame
	}
	for len(w.out) == 0 {
		f, err := w.nextFrame()
		if err != nil {
			return 0, err
		}
		w.outHandshake = w.frame(f)
		w.out = f
		if !w.outHandshake && !w.link.hand(w.out) {
			w.out = nil // dropped: the zk.Conn is closing
		}
	}
	n := copy(p, w.out)
	w.out = w.out[n:]
	if len(w.out) == 0 && !w.outHandshake {
		w.handed = true
	}
	return n, nil
}

// nextFrame waits for the next frame readAhead kept for go-zookeeper.
func (w *wireConn) nextFrame() ([]byte, error) {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	for len(w.ready) == 0 && w.rerr == nil {
		w.rcond.Wait()
	}
	if len(w.ready) == 0 {
		return nil, w.rerr
	}
	f := w.ready[0]
	w.ready[0] = nil
	w.ready = w.ready[1:]
	return f, nil
}

// readAhead reads the network on its own goroutine, so that the answers
// of our own requests (the quorum timer's syncs, removeWatches) are taken
// as they arrive, not once go-zookeeper's reader has decoded everything
// before them (a session with thousands of waiters keeps it busy). The
// read deadlines go-zookeeper sets apply to these reads, as before.
func (w *wireConn) readAhead() {
	var in []byte // read from the network, not yet a whole frame
	buf := make([]byte, 4096)
	first := true // the connect response, which has no xid
	for {
		n, err := w.Conn.Read(buf)
		if n > 0 {
			w.link.lastHeard.Store(time.Now().UnixNano())
			in = append(in, buf[:n]...)
			var frames [][]byte
			for len(in) >= 4 {
				size := 4 + int64(binary.BigEndian.Uint32(in))
				if int64(len(in)) < size {
					break
				}
				f := in[:size:size]
				in = in[size:]
				if first || !w.link.takeInjected(f) {
					frames = append(frames, f)
				}
				first = false
			}
			if len(in) == 0 {
				in = nil
			}
			if len(frames) > 0 {
				w.rmu.Lock()
				w.ready = append(w.ready, frames...)
				w.rcond.Signal()
				w.rmu.Unlock()
			}
		}
		if err != nil {
			if !w.answered.Load() && !errors.Is(err, net.ErrClosed) {
				w.link.failed(fmt.Errorf("%s closed the connection before answering the connect request: %w", w.addr, err))
			}
			w.link.closedByServer.Store(errors.Is(err, io.EOF))
			w.link.silent.done(w)
			if errors.Is(err, io.EOF) {
				w.link.silent.heard(w.addr) // it answers, if only by closing
			}
			w.link.connGone(w)
			w.rmu.Lock()
			w.rerr = err
			w.rcond.Signal()
			w.rmu.Unlock()
			return
		}
	}
}

// frame reads f before go-zookeeper: the connect response, then responses
// (length, xid, zxid, err, body), taking their zxid.
func (w *wireConn) frame(f []byte) (handshake bool) {
	if !w.parsed {
		w.parsed = true
		w.answered.Store(true)
		w.link.silent.done(w)
		w.link.silent.heard(w.addr)
		if hs, ok := parseConnectResponse(f); ok {
			if hs.sessionID == 0 {
				w.link.lastZxid.Store(0) // expired; go-zookeeper starts over too
			}
			hs.sent = w.connectAt.Load()
			w.link.hs.Store(&hs)
			if hs.sessionID != 0 {
				w.link.cur.Store(w) // removals may be written on it
			}
		}
		w.relZxid.Store(w.link.lastZxid.Load())
		return true
	}
	if len(f) < 16 || int32(binary.BigEndian.Uint32(f[4:])) < 0 {
		return false // go-zookeeper fails on a short one, and ignores the zxid of events and pings
	}
	if zxid := int64(binary.BigEndian.Uint64(f[8:])); zxid > 0 {
		w.link.lastZxid.Store(zxid)
		binary.BigEndian.PutUint64(f[8:], 0)
	}
	return false
}

// takeInjected takes f if it answers a request this package injected.
func (l *link) takeInjected(f []byte) bool {
	if len(f) < 8 {
		return false
	}
	xid := int32(binary.BigEndian.Uint32(f[4:]))
	if xid > removeXidBase || xid <= removeXidBase-removeXidSpan {
		return false
	}
	if len(f) >= 20 {
		l.answered(xid, f)
	}
	return true
}

// boundHandshake drops the connection if its connect request is not
// answered within link.handshakeWait (less for a reconnect), so that
// go-zookeeper tries the next server instead of waiting 20 read timeouts
// on a silent one.
func (w *wireConn) boundHandshake() {
	d := w.link.handshakeWait
	if d <= 0 {
		return
	}
	if ep := w.link.quorum.Load(); ep != nil && ep.ctx.Err() == nil {
		// A reconnect: half what the quorum timer has left, so that the
		// next server gets a chance too.
		d = min(d, max(time.Until(ep.quorumDeadline())/2, minHandshakeWait/2))
	}
	w.link.silent.wait(w)
	time.AfterFunc(d, func() {
		if !w.answered.Load() {
			w.link.stats.handshakesCut.Add(1)
			w.link.failed(fmt.Errorf("%s did not answer the connect request within %v", w.addr, d))
			w.link.silent.add(w.addr) // cuts w
		}
	})
}

// drop closes the connection that has the session, if any: go-zookeeper
// reconnects to the next server (Session.leaveSilent).
func (l *link) drop() (server string, ok bool) {
	if w := l.cur.Load(); w != nil {
		w.Conn.Close()
		l.silent.add(w.addr)
		return w.addr, true
	}
	return "", false
}

// parseConnectResponse decodes frame f: int32 length, int32
// protocolVersion, int32 timeOut, int64 sessionId, buffer passwd.
func parseConnectResponse(f []byte) (handshake, bool) {
	body := f[4:]
	if len(body) < 20 {
		return handshake{}, false
	}
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

// link is one zk.Conn's wire. Once retired it refuses to dial, so the
// zk.Conn can never open a new session behind our back.
type link struct {
	dial           func(network, addr string, timeout time.Duration) (net.Conn, error)
	stats          *counters
	retired        atomic.Bool
	lastHeard      atomic.Int64          // unix nanoseconds
	handshakeWait  time.Duration         // how long a connect request may go unanswered (boundHandshake); 0: go-zookeeper's own bound
	silent         *silentSet            // the Session's
	quorum         atomic.Pointer[Epoch] // the epoch whose quorum timer runs on this zk.Conn, if any (boundHandshake)
	failed         func(error)           // told why a try at a server failed (Session.attemptFailed)
	connectSent    atomic.Int64          // when the latest connect request was written (unix ns)
	lastZxid       atomic.Int64          // of the last response handed to go-zookeeper (see wireConn)
	closedByServer atomic.Bool           // the last connection ended with EOF (hostProvider)

	// Closing a zk.Conn with answers on the wire: see beginClose.
	gate          sync.Mutex
	idle          sync.Cond     // on gate: busy became false
	busy          bool          // the reader has a frame it has not finished with
	closing       bool          // beginClose was called: hand over no more answers
	closeXid      atomic.Int64  // xid of go-zookeeper's close request + 1; 0 until written
	closeSent     chan struct{} // closed once the close request is written (abandonLink)
	closeSentOnce sync.Once

	creates sentCreates

	hs    atomic.Pointer[handshake] // the last connect response
	mu    sync.Mutex
	conns map[*wireConn]struct{} // open connections, closed by closeAll

	wmu     sync.Mutex               // held for every frame written, go-zookeeper's and injected
	cur     atomic.Pointer[wireConn] // the connection with a session, nil while there is none
	watches watchSet
	counted func(delta int) // the session's Watches hook (WithMetrics), told the watch count's changes; nil: none
}

func newLink(dial func(network, addr string, timeout time.Duration) (net.Conn, error), stats *counters, counted func(int)) *link {
	l := &link{dial: dial, stats: stats, counted: counted, closeSent: make(chan struct{}), conns: make(map[*wireConn]struct{})}
	l.idle.L = &l.gate
	l.hs.Store(&handshake{})
	return l
}

func (l *link) dialer(network, addr string, timeout time.Duration) (net.Conn, error) {
	if l.retired.Load() {
		return nil, errRetired
	}
	c, err := l.dial(network, addr, timeout)
	if err != nil {
		l.failed(fmt.Errorf("dialing %s: %w", addr, err))
		return nil, err
	}
	w := &wireConn{Conn: writeFailConn{c}, link: l, addr: addr}
	w.rcond.L = &w.rmu
	l.mu.Lock()
	l.conns[w] = struct{}{}
	l.mu.Unlock()
	go w.readAhead() // ends when the connection is closed
	return w, nil
}

func (w *wireConn) Close() error {
	w.link.silent.done(w)
	w.link.connGone(w)
	w.link.mu.Lock()
	delete(w.link.conns, w)
	w.link.mu.Unlock()
	return w.Conn.Close()
}

// keptSince is when the connect request last answered for session id was written.
func (l *link) keptSince(id int64) int64 {
	if hs := l.hs.Load(); hs.sessionID == id && hs.timeout > 0 {
		return hs.sent
	}
	return 0
}

// beginClose runs right before zk.Conn.Close: from then on the reader gets
// no answer but the close request's (docs/design.md, "The wire"). It waits
// until deadline at most for the reader to finish its frame (false: not).
func (l *link) beginClose(deadline time.Time) bool {
	t := time.AfterFunc(time.Until(deadline), func() {
		l.gate.Lock()
		defer l.gate.Unlock()
		l.idle.Broadcast()
	})
	defer t.Stop()
	l.gate.Lock()
	defer l.gate.Unlock()
	l.closing = true
	for l.busy && time.Now().Before(deadline) {
		l.idle.Wait()
	}
	return !l.busy
}

// hand is called before the reader gets frame f; false: drop it.
func (l *link) hand(f []byte) bool {
	l.gate.Lock()
	defer l.gate.Unlock()
	if l.closing && len(f) >= 8 {
		xid := int32(binary.BigEndian.Uint32(f[4:]))
		if xid >= 0 && int64(xid)+1 != l.closeXid.Load() {
			return false
		}
	}
	l.busy = true
	return true
}

// readerBack: the reader is done with its frame (or has ended).
func (l *link) readerBack() {
	l.gate.Lock()
	defer l.gate.Unlock()
	l.busy = false
	l.idle.Broadcast()
}

// closeAll closes every TCP connection, unblocking the reader at once.
func (l *link) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.conns {
		w.Conn.Close()
		delete(l.conns, w)
	}
}

// writeFailConn reports a failed write as written and closes the connection:
// go-zookeeper must learn of it from its reader (docs/design.md, "The wire").
type writeFailConn struct{ net.Conn }

func (c writeFailConn) Write(p []byte) (int, error) {
	if _, err := c.Conn.Write(p); err != nil {
		c.Conn.Close() // go-zookeeper's reader fails on its next read
	}
	return len(p), nil
}

// sentCreates tells when a create request is written (CreateWritten).
type sentCreates struct {
	mu   sync.Mutex
	next chan struct{} // closed at the next create written; nil while nobody waits
}

// wrote is told the opcode of every frame go-zookeeper writes.
func (s *sentCreates) wrote(op int32) {
	switch op {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
		s.mu.Lock()
		if s.next != nil {
			close(s.next)
			s.next = nil
		}
		s.mu.Unlock()
	}
}

func (s *sentCreates) after() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next = make(chan struct{})
	}
	return s.next
}

func (e *epochView) CreateWritten() <-chan struct{} { return e.wire.creates.after() }
