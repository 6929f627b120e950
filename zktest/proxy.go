package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is an in-process TCP proxy between one client and the servers of a
// cluster, for fault tests: one listener on 127.0.0.1 per target, each
// connection forwarded to its listener's target. Its methods are safe for
// concurrent use.
//
// Faults apply to the whole proxy (all listeners):
//
//   - Cut resets every current connection; new ones are forwarded normally.
//   - Blackhole keeps connections open but forwards nothing, in either
//     direction; new connections are accepted and get nothing either. The
//     data is dropped, and a close by the server is not passed on.
//   - Heal ends a blackhole by resetting the blackholed connections. They are
//     not resumed: bytes were dropped, so the stream has lost its framing,
//     just as a real path that comes back after the peer gave up finds no
//     connection. The client reconnects through the proxy.
//   - SetLatency delays every forwarded chunk.
//   - CutAfterNextWrite loses the response of the next request.
//   - BlackholeAfterNextWrite forwards the next request, then blackholes:
//     the server executes it, and its response is lost in the blackhole
//     (BlackholeAfterWrites: the same after the next n requests;
//     BlackholeAfterNextOp: after the client's next operation, past a
//     reconnect's set-up).
type Proxy struct {
	targets []string
	lns     []net.Listener
	addrs   []string
	wg      sync.WaitGroup // accept loops and pumps; Close waits for them

	mu        sync.Mutex // guards the fields below and the guarded fields of each link
	links     map[*link]struct{}
	blackhole bool
	latency   time.Duration
	cutArmed  bool
	holeAfter int    // BlackholeAfterWrites: writes to let through before the blackhole; 0: disarmed
	holeOps   bool   // holeAfter counts operations only (BlackholeAfterNextOp)
	holeSync  string // holeAfter counts only operations on this path or below (BlackholeAfterNextOpOn)
	closed    bool
}

// link is one proxied connection.
type link struct {
	client net.Conn
	done   chan struct{} // closed by Proxy.closeLink
	once   sync.Once

	// Guarded by Proxy.mu.
	server      net.Conn // nil until dialled; never dialled if accepted during a blackhole
	blackholed  bool
	dropReplies bool        // CutAfterNextWrite fired: the link is being cut
	cutTimer    *time.Timer // resets the link if the server does not answer
	closed      bool
	sent        int // frames from the client begun so far (the first is its handshake)
	rest        int // bytes of the client's current frame still to come
}

type direction int

const (
	toServer direction = iota
	toClient
)

const (
	proxyDialTimeout = 5 * time.Second
	cutFallback      = 5 * time.Second // CutAfterNextWrite without a response
)

// NewProxy starts a Proxy to targets (usually Cluster.Servers()) and closes
// it in t.Cleanup. It calls t.Fatal if a listener cannot be opened.
func NewProxy(t testing.TB, targets []string) *Proxy {
	t.Helper()
	p, err := StartProxy(targets)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartProxy starts a Proxy to targets. Call Close when done.
func StartProxy(targets []string) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: proxy without targets", ErrBadOption)
	}
	p := &Proxy{targets: append([]string(nil), targets...), links: make(map[*link]struct{})}
	for range targets {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range p.lns {
				l.Close()
			}
			return nil, fmt.Errorf("zktest: proxy: %w", err)
		}
		p.lns = append(p.lns, ln)
		p.addrs = append(p.addrs, ln.Addr().String())
	}
	for i, ln := range p.lns {
		p.wg.Add(1)
		go p.accept(ln, p.targets[i])
	}
	return p, nil
}

// Addrs returns the proxy's addresses; index i forwards to target i. Give
// them to the client instead of the servers' addresses.
func (p *Proxy) Addrs() []string { return append([]string(nil), p.addrs...) }

// Cut resets all current connections. New connections are accepted and
// forwarded normally.
func (p *Proxy) Cut() {
	for _, l := range p.snapshot(func(*link) bool { return true }) {
		p.closeLink(l, closeRST)
	}
}

// Blackhole stops forwarding: existing and new connections stay open, but
// every byte, in both directions, is dropped until Heal.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = true
	for l := range p.links {
		l.blackholed = true
	}
}

// Heal ends a blackhole: it resets every blackholed connection (see the
// type's documentation for why they are not resumed); new connections are
// forwarded normally.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.blackhole = false
	p.mu.Unlock()
	for _, l := range p.snapshot(func(l *link) bool { return l.blackholed }) {
		p.closeLink(l, closeRST)
	}
}

// SetLatency delays each forwarded chunk by d; 0 (or less) turns it off.
// Chunks keep their order within a direction, so a chunk also waits for the
// ones before it.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// CutAfterNextWrite arms a one-shot fault: the next chunk from a client to a
// server is forwarded, then its connection is reset before any byte of the
// response reaches the client. The server executes the request (a create
// succeeds) but the client never learns the result.
//
// To be sure the server executes it (ZooKeeper drops requests still queued
// when their connection closes), the proxy holds the connection open,
// forwarding nothing more from the client, until the server's first response
// arrives — which it drops — or 5 s have passed, and then resets both sides.
// Chunks that are only a ZooKeeper ping do not fire it; a reconnect handshake
// does. Arm it right before the request whose response should be lost.
func (p *Proxy) CutAfterNextWrite() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutArmed = true
}

// BlackholeAfterNextWrite arms a one-shot fault: the next request from a
// client to a server is forwarded, and the proxy blackholes (as Blackhole)
// at that very moment, before any byte of the response can reach the
// client. The connection stays open, so the server executes the request (a
// create succeeds), but the client learns nothing until Heal, and then
// only that its connection is gone. ZooKeeper pings do not fire it. Arm it right before the request whose response should
// be lost.
func (p *Proxy) BlackholeAfterNextWrite() { p.BlackholeAfterWrites(1) }

// BlackholeAfterWrites is BlackholeAfterNextWrite for the n-th of the next
// requests from a client to a server (pings not counted): the n-1 before
// it are forwarded and answered normally, and nothing the client sent
// behind it passes, also when it came in the same chunk. n < 1 disarms
// it.
func (p *Proxy) BlackholeAfterWrites(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holeAfter = max(n, 0)
	p.holeOps = false
	p.holeSync = ""
}

// BlackholeAfterNextOp is BlackholeAfterNextWrite for the client's next
// operation (a create, a read, a sync, a multi...): what a connection sends
// to set itself up (its handshake, authentication, the watches set again
// after a reconnect) and pings go through without counting. Armed before
// Heal, it lets the client reconnect and loses the answer of the first
// request it sends on the new connection, one it queued while disconnected
// included. BlackholeAfterWrites(0) disarms it.
func (p *Proxy) BlackholeAfterNextOp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holeAfter = 1
	p.holeOps = true
	p.holeSync = ""
}

// BlackholeAfterNextOpOn is BlackholeAfterNextOp for the client's next
// operation on path or on a node below it (a read, a sync, a create...; a
// multi is not looked into): every other request goes through without
// counting, the syncs of "/" a session sends to keep itself (the quorum
// timer's) included. It loses a recipe's search for its node after a lost
// answer, on whichever connection it is sent. BlackholeAfterWrites(0)
// disarms it.
func (p *Proxy) BlackholeAfterNextOpOn(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holeAfter = 1
	p.holeOps = true
	p.holeSync = path
}

// Blackholed reports whether the proxy is blackholed now (Blackhole, or an
// armed BlackholeAfter... that fired), until Heal.
func (p *Proxy) Blackholed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blackhole
}

// Close stops the listeners, closes every connection and waits for the
// proxy's goroutines. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	p.mu.Unlock()
	if !already {
		for _, ln := range p.lns {
			ln.Close()
		}
		for _, l := range p.snapshot(func(*link) bool { return true }) {
			p.closeLink(l, closeFIN)
		}
	}
	p.wg.Wait()
}

// snapshot returns the open links that match keep.
func (p *Proxy) snapshot(keep func(*link) bool) []*link {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ls []*link
	for l := range p.links {
		if keep(l) {
			ls = append(ls, l)
		}
	}
	return ls
}

// accept runs one listener's accept loop until the listener is closed.
func (p *Proxy) accept(ln net.Listener, target string) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		p.wg.Add(1)
		go p.serve(c, target)
	}
}

// serve dials the target for a new client connection and starts the pumps.
func (p *Proxy) serve(c net.Conn, target string) {
	defer p.wg.Done()
	l := &link{client: c, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.links[l] = struct{}{}
	l.blackholed = p.blackhole
	dial := !l.blackholed
	p.mu.Unlock()

	if dial {
		s, err := net.DialTimeout("tcp", target, proxyDialTimeout)
		if err != nil { // like a refused connection
			p.closeLink(l, closeRST)
			return
		}
		p.mu.Lock()
		l.server = s
		closed := l.closed
		p.mu.Unlock()
		if closed {
			s.Close()
			return
		}
		p.wg.Add(1)
		go p.pump(l, toClient, s, c)
	}
	p.wg.Add(1)
	go p.pump(l, toServer, c, nil)
}

// pump copies chunks from src in one direction until the link closes. dst is
// the client for toClient; for toServer it is looked up per chunk.
func (p *Proxy) pump(l *link, dir direction, src, dst net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.forward(l, dir, buf[:n], dst) {
			return
		}
		if err != nil {
			p.mu.Lock()
			silent := l.blackholed && dir == toClient
			p.mu.Unlock()
			if silent { // the server's close must not cross the blackhole
				src.Close()
				return
			}
			p.closeLink(l, closeFIN)
			return
		}
	}
}

// forward delivers one chunk, or drops it, and reports whether the pump
// should go on.
func (p *Proxy) forward(l *link, dir direction, chunk []byte, dst net.Conn) bool {
	p.mu.Lock()
	delay := p.latency
	p.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-l.done:
			t.Stop()
			return false
		case <-t.C:
		}
	}

	p.mu.Lock()
	switch {
	case l.closed:
		p.mu.Unlock()
		return false
	case l.blackholed:
		p.mu.Unlock()
		return true // dropped
	case l.dropReplies && dir == toClient:
		// The response to the request forwarded by CutAfterNextWrite: the
		// server has executed it; drop it and reset the connection.
		p.mu.Unlock()
		p.closeLink(l, closeRST)
		return false
	case l.dropReplies:
		p.mu.Unlock()
		return true // the client is not heard any more
	}
	cut := false
	if dir == toServer {
		dst = l.server
		cutNow := p.cutArmed && !isPing(chunk)
		end, hit := l.frames(chunk, func(frame []byte, first bool) bool {
			if cutNow || p.holeAfter == 0 || isPing(frame) || p.holeOps && (first || isSetUp(frame)) ||
				p.holeSync != "" && !isOpOn(frame, p.holeSync) {
				return false
			}
			p.holeAfter--
			return p.holeAfter == 0
		})
		switch {
		case cutNow:
			p.cutArmed = false
			l.dropReplies = true
			cut = true
		case hit:
			// Blackhole now, under the lock, so that no response can
			// pass; this chunk still goes through (it is written below)
			// up to the end of the n-th request: a client that sends a
			// request behind another without waiting (the engine's listing
			// behind its create) may have both in one chunk.
			chunk = chunk[:end]
			p.blackhole = true
			for o := range p.links {
				o.blackholed = true
			}
		}
	}
	p.mu.Unlock()

	if _, err := dst.Write(chunk); err != nil {
		p.closeLink(l, closeFIN)
		return false
	}
	if cut {
		// Normally the server's response ends the link (above); if none
		// comes, reset it anyway.
		t := time.AfterFunc(cutFallback, func() { p.closeLink(l, closeRST) })
		p.mu.Lock()
		l.cutTimer = t
		p.mu.Unlock()
	}
	return true
}

// How closeLink ends a link.
type closeMode int

const (
	closeFIN closeMode = iota // plain close of both sides
	closeRST                  // reset both sides (linger 0): unread data is lost
)

// closeLink closes both sides of l, once.
func (p *Proxy) closeLink(l *link, how closeMode) {
	l.once.Do(func() {
		p.mu.Lock()
		l.closed = true
		delete(p.links, l)
		s, t := l.server, l.cutTimer
		p.mu.Unlock()
		if t != nil {
			t.Stop()
		}
		close(l.done)
		reset(l.client, how == closeRST)
		if s != nil {
			reset(s, how == closeRST)
		}
	})
}

// reset closes c, with an RST instead of a FIN if rst.
func reset(c net.Conn, rst bool) {
	if tc, ok := c.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// frames walks the ZooKeeper requests (length-prefixed frames) that begin
// in chunk, the next bytes the client sent on l (the rest of a frame begun
// in an earlier chunk is skipped): visit gets each frame (cut off at the
// end of chunk if it goes on) and whether it is the link's first, the
// handshake. frames stops at the first frame visit returns true for and
// returns its end with hit true; else len(chunk). Call with p.mu held.
func (l *link) frames(chunk []byte, visit func(frame []byte, first bool) bool) (end int, hit bool) {
	off := min(l.rest, len(chunk))
	l.rest -= off
	for off < len(chunk) {
		size := len(chunk) - off
		if off+4 <= len(chunk) {
			size = 4 + int(binary.BigEndian.Uint32(chunk[off:]))
		}
		next := min(off+size, len(chunk))
		l.rest = off + size - next
		first := l.sent == 0
		l.sent++
		if visit(chunk[off:next], first) {
			return next, true
		}
		off = next
	}
	return len(chunk), false
}

// isSetUp reports whether frame is a request a client sends to set up a
// connection after its handshake: its xid is negative (authentication -4,
// set-watches -8; a ping, -2, is one too), or it is an authentication
// (type 100), which go-zookeeper's AddAuth sends with an ordinary xid. A
// sync (type 9) is an operation whatever its xid: conn writes the quorum
// timer's syncs with xids of its own.
func isSetUp(frame []byte) bool {
	if len(frame) < 12 {
		return len(frame) >= 8 && int32(binary.BigEndian.Uint32(frame[4:8])) < 0
	}
	op := binary.BigEndian.Uint32(frame[8:12])
	return int32(binary.BigEndian.Uint32(frame[4:8])) < 0 && op != 9 || op == 100
}

// isOpOn reports whether frame is a whole request on path or on a node
// below it: one of the types whose body starts with the path (create,
// delete, exists, getData, setData, getACL, setACL, getChildren, sync,
// getChildren2, create2, createContainer, createTTL).
func isOpOn(frame []byte, path string) bool {
	if len(frame) < 16 {
		return false
	}
	switch binary.BigEndian.Uint32(frame[8:12]) {
	case 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 19, 21:
	default:
		return false
	}
	n := int(binary.BigEndian.Uint32(frame[12:16]))
	if n < 0 || len(frame) < 16+n {
		return false
	}
	p := string(frame[16 : 16+n])
	return p == path || strings.HasPrefix(p, strings.TrimSuffix(path, "/")+"/")
}

// isPing reports whether chunk is exactly one ZooKeeper ping request:
// length 8, xid -2, type 11.
func isPing(chunk []byte) bool {
	return len(chunk) == 12 &&
		binary.BigEndian.Uint32(chunk[0:4]) == 8 &&
		int32(binary.BigEndian.Uint32(chunk[4:8])) == -2 &&
		binary.BigEndian.Uint32(chunk[8:12]) == 11
}
