package conn

import (
	"encoding/binary"
	"fmt"
	"sync"

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
	on   *wireConn // written on it; set under watchSet.mu
	once sync.Once
	done chan struct{} // closed with err set
	err  error
}

// end ends ps with err (nil: answered) the first time.
func (ps *pendingSync) end(err error) {
	ps.once.Do(func() {
		ps.err = err
		close(ps.done)
	})
}

func (ps *pendingSync) answer(code int32) {
	switch code {
	case 0:
		ps.end(nil)
	case errSessionExpired:
		ps.end(zk.ErrSessionExpired)
	case errSessionMoved:
		ps.end(zk.ErrSessionMoved)
	default:
		ps.end(fmt.Errorf("server error %d", code))
	}
}

// sync writes a sync of "/" on the connection that has the session and
// waits for its answer, the connection's end or stop. The write runs on a
// goroutine of its own, not waited for: a dialer's Write may never return.
func (l *link) sync(stop <-chan struct{}) error {
	ps := &pendingSync{done: make(chan struct{})}
	go l.writeSync(ps)
	select {
	case <-ps.done:
		return ps.err
	case <-stop:
		ps.end(zk.ErrClosing)
		return zk.ErrClosing
	}
}

func (l *link) writeSync(ps *pendingSync) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	w := l.cur.Load()
	if w == nil || l.retired.Load() {
		ps.end(zk.ErrConnectionClosed)
		return
	}
	w.flushLocked()
	ws := &l.watches
	ws.mu.Lock()
	if ws.syncs == nil {
		ws.syncs = make(map[int32]*pendingSync)
	}
	ws.next++
	xid := int32(removeXidBase - int64(ws.next%removeXidSpan))
	ps.on = w
	ws.syncs[xid] = ps // until answered or the connection is gone (connGone)
	ws.mu.Unlock()
	w.Conn.Write(encodeSync(xid))
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
