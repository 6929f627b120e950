package conn

import (
	"encoding/binary"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// The quorum timer's syncs are written by the wire itself, as removeWatches
// requests are, and their answers taken by readAhead as they arrive: behind
// at most the answers already on the wire, never behind go-zookeeper's
// decoding of the rest (docs/design.md, "The quorum timer's numbers").

const (
	opSync            = 9
	errSessionExpired = -112 // the server's error codes, which go-zookeeper keeps to itself
	errSessionMoved   = -118
)

// pendingSync is one injected sync, written and not answered.
type pendingSync struct {
	on   *wireConn     // written on it
	done chan struct{} // closed with err set
	err  error
}

func (ps *pendingSync) answer(code int32) {
	switch code {
	case 0:
	case errSessionExpired:
		ps.err = zk.ErrSessionExpired
	case errSessionMoved:
		ps.err = zk.ErrSessionMoved
	default:
		ps.err = fmt.Errorf("server error %d", code)
	}
	close(ps.done)
}

// sync writes a sync of "/" on the connection that has the session and
// waits for its answer, the connection's end or stop.
func (l *link) sync(stop <-chan struct{}) error {
	l.wmu.Lock()
	w := l.cur.Load()
	if w == nil || l.retired.Load() {
		l.wmu.Unlock()
		return zk.ErrConnectionClosed
	}
	w.flushLocked()
	ws := &l.watches
	ws.mu.Lock()
	if ws.syncs == nil {
		ws.syncs = make(map[int32]*pendingSync)
	}
	ws.next++
	xid := int32(removeXidBase - int64(ws.next%removeXidSpan))
	ps := &pendingSync{on: w, done: make(chan struct{})}
	ws.syncs[xid] = ps
	ws.mu.Unlock()
	w.Conn.Write(encodeSync(xid))
	l.wmu.Unlock()
	select {
	case <-ps.done:
		return ps.err
	case <-stop:
		ws.mu.Lock()
		delete(ws.syncs, xid)
		ws.mu.Unlock()
		return zk.ErrClosing
	}
}

// encodeSync: int32 length, xid, opcode, string path "/".
func encodeSync(xid int32) []byte {
	b := make([]byte, 4+4+4+4+1)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	binary.BigEndian.PutUint32(b[8:], uint32(opSync))
	binary.BigEndian.PutUint32(b[12:], 1)
	b[16] = '/'
	return b
}
