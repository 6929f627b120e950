package conn

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Watch removal: docs/design.md, "Removing watches".

// watchKind is a server watch table, numbered as removeWatches' watcherType.
type watchKind int32

const (
	kindChild watchKind = 1 // ChildrenW
	kindData  watchKind = 2 // GetW, ExistsW
)

// watchKey is a server watch: a full (namespaced) path and a table.
type watchKey struct {
	path string
	kind watchKind
}

// errNoWatcher is removeWatches' answer when there was nothing to remove.
const errNoWatcher int32 = -121

// Injected requests' xids, in (removeXidBase-removeXidSpan, removeXidBase]:
// go-zookeeper uses only xids >= 0 and -2, and the server -1 for events.
const (
	removeXidBase = -0x10000000
	removeXidSpan = 0x10000000
)

// watchReg is one watcher: one GetW, ExistsW or ChildrenW, set or in flight.
type watchReg struct {
	key      watchKey
	done     bool            // counted off: stopped, fired, or the call failed
	attached bool            // the call set the watch (go-zookeeper holds a channel)
	out      <-chan zk.Event // the channel handed out, once attached
	stop     chan struct{}   // closed when counted off: ends the forwarder
}

// removal is one removeWatches request.
type removal struct {
	key  watchKey
	xid  int32
	on   *wireConn     // written on it; nil while queued
	done chan struct{} // closed with err set
	err  error
}

// watchSet is the link's record of watchers and removals. Lock order:
// link.wmu, then mu. The Watches hook counts live's keys, told under mu.
type watchSet struct {
	mu      sync.Mutex
	live    map[watchKey]int              // watchers not counted off, by key; no zero entries
	byCh    map[<-chan zk.Event]*watchReg // attached, not counted off, by the channel handed out
	queue   []*removal                    // not written yet
	pending map[int32]*removal            // written, answer not read
	syncs   map[int32]*pendingSync        // quorum syncs written, answer not read (quorumsync.go)
	next    uint32                        // xid counter
}

// register counts a watcher in before its request can be written.
func (l *link) register(key watchKey) *watchReg {
	ws := &l.watches
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.live == nil {
		ws.live = make(map[watchKey]int)
		ws.byCh = make(map[<-chan zk.Event]*watchReg)
		ws.pending = make(map[int32]*removal)
	}
	if ws.live[key]++; ws.live[key] == 1 && l.counted != nil {
		l.counted(1)
	}
	return &watchReg{key: key, stop: make(chan struct{})}
}

// attach records that r's call set its watch and returns the channel to
// hand out, which counts r off when it fires; nil if r stopped meanwhile.
func (l *link) attach(r *watchReg, zch <-chan zk.Event) <-chan zk.Event {
	ws := &l.watches
	ws.mu.Lock()
	r.attached = true
	if r.done {
		// Abandoned while in flight (its caller gave up): nobody waits.
		if ws.live[r.key] == 0 {
			l.queueRemovalLocked(r.key)
		}
		ws.mu.Unlock()
		return nil
	}
	out := make(chan zk.Event, 1)
	r.out = out
	ws.byCh[out] = r
	ws.mu.Unlock()
	go func() {
		select {
		case ev, ok := <-zch:
			l.countOff(r, false)
			if ok {
				out <- ev
			}
			close(out)
		case <-r.stop:
		}
	}()
	return out
}

// countOff counts r off; the last stopped on a set watch queues its removal.
func (l *link) countOff(r *watchReg, stopped bool) *removal {
	ws := &l.watches
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if r.done {
		return nil
	}
	r.done = true
	close(r.stop)
	if r.out != nil {
		delete(ws.byCh, r.out)
	}
	if ws.live[r.key]--; ws.live[r.key] > 0 {
		return nil
	}
	delete(ws.live, r.key)
	if l.counted != nil {
		l.counted(-1)
	}
	if stopped && r.attached {
		return l.queueRemovalLocked(r.key)
	}
	return nil
}

// queueRemovalLocked queues a removal for another goroutine to write. ws.mu held.
func (l *link) queueRemovalLocked(key watchKey) *removal {
	ws := &l.watches
	ws.next++
	rm := &removal{key: key, xid: int32(removeXidBase - int64(ws.next%removeXidSpan)), done: make(chan struct{})}
	ws.queue = append(ws.queue, rm)
	go func() {
		l.wmu.Lock()
		defer l.wmu.Unlock()
		if w := l.cur.Load(); w != nil && !l.retired.Load() {
			w.flushLocked()
		}
	}()
	return rm
}

// flushLocked writes the queued removals on w. l.wmu held.
func (w *wireConn) flushLocked() {
	l := w.link
	ws := &l.watches
	ws.mu.Lock()
	q := ws.queue
	ws.queue = nil
	for _, rm := range q {
		rm.on = w
		ws.pending[rm.xid] = rm
	}
	ws.mu.Unlock()
	for _, rm := range q {
		w.Conn.Write(encodeRemoveWatches(rm.xid, rm.key))
		l.stats.watchesRemoved.Add(1)
	}
}

// encodeRemoveWatches: int32 length, xid, opcode, string path, int32 watcherType.
func encodeRemoveWatches(xid int32, key watchKey) []byte {
	b := make([]byte, 4+4+4+4+len(key.path)+4)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	binary.BigEndian.PutUint32(b[8:], uint32(opRemoveWatches))
	binary.BigEndian.PutUint32(b[12:], uint32(len(key.path)))
	copy(b[16:], key.path)
	binary.BigEndian.PutUint32(b[16+len(key.path):], uint32(key.kind))
	return b
}

// answered takes an injected request's answer (length, xid, zxid, err).
func (l *link) answered(xid int32, f []byte) {
	ws := &l.watches
	ws.mu.Lock()
	rm := ws.pending[xid]
	delete(ws.pending, xid)
	ps := ws.syncs[xid]
	delete(ws.syncs, xid)
	ws.mu.Unlock()
	if ps != nil {
		ps.answer(int32(binary.BigEndian.Uint32(f[16:])))
	}
	if rm == nil {
		return
	}
	if code := int32(binary.BigEndian.Uint32(f[16:])); code != 0 && code != errNoWatcher {
		rm.err = fmt.Errorf("conn: removing the %s watch on %s: server error %d", rm.key.kind, rm.key.path, code)
	}
	close(rm.done)
}

// connGone completes the removals written on w: its watches went with it.
func (l *link) connGone(w *wireConn) {
	l.cur.CompareAndSwap(w, nil)
	ws := &l.watches
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for xid, rm := range ws.pending {
		if rm.on == w {
			delete(ws.pending, xid)
			close(rm.done)
		}
	}
	for xid, ps := range ws.syncs {
		if ps.on == w {
			delete(ws.syncs, xid)
			ps.end(zk.ErrConnectionClosed)
		}
	}
}

// filterSetWatches drops from set-watches request f the paths no watcher waits on.
func (l *link) filterSetWatches(f []byte) []byte {
	ws := &l.watches
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := append([]byte(nil), f[:20]...)
	rest := f[20:]
	dropped := false
	for _, kind := range []watchKind{kindData, kindData, kindChild} {
		if len(rest) < 4 {
			return f
		}
		n := int(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		var keep [][]byte
		for i := 0; i < n; i++ {
			if len(rest) < 4 {
				return f
			}
			m := int(int32(binary.BigEndian.Uint32(rest)))
			if m < 0 || len(rest) < 4+m {
				return f
			}
			if ws.live[watchKey{string(rest[4 : 4+m]), kind}] > 0 {
				keep = append(keep, rest[:4+m])
			} else {
				dropped = true
			}
			rest = rest[4+m:]
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(keep)))
		for _, s := range keep {
			out = append(out, s...)
		}
	}
	if !dropped {
		return f
	}
	out = append(out, rest...)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

func (k watchKind) String() string {
	if k == kindChild {
		return "child"
	}
	return "data"
}

// Unwatch: the watcher of ch stopped. If the last on a watch not yet
// fired, the removal is sent, its answer awaited within ctx and the epoch.
func (e *epochView) Unwatch(ctx context.Context, ch <-chan zk.Event) error {
	l := e.wire
	l.watches.mu.Lock()
	r := l.watches.byCh[ch]
	l.watches.mu.Unlock()
	if r == nil {
		return nil
	}
	rm := l.countOff(r, true)
	if rm == nil {
		return nil
	}
	select {
	case <-rm.done:
		return rm.err
	case <-ctx.Done():
		return fmt.Errorf("conn: removing the %s watch on %s: %w", rm.key.kind, e.s.strip(rm.key.path), ctx.Err())
	case <-e.ctx.Done():
		return nil // the session's watches went with it
	}
}

// watchCall runs f, a watch-setting call, counting its watcher (watchReg).
func watchCall[T any](ctx context.Context, e *Epoch, op, path string, kind watchKind,
	f func(*zk.Conn, string) (T, *zk.Stat, <-chan zk.Event, error)) (T, *zk.Stat, <-chan zk.Event, error) {
	if err := zkpath.Validate(path); err != nil {
		var zero T
		return zero, nil, nil, fmt.Errorf("conn: %s: %w", op, err)
	}
	full := e.s.abs(path)
	l := e.wire
	r := l.register(watchKey{full, kind})
	res, err := callAbs(ctx, e, op, full, true, func(zc *zk.Conn, p string) (result[T], error) {
		v, st, zch, err := f(zc, p)
		var ch <-chan zk.Event
		if zch != nil {
			ch = l.attach(r, zch)
		}
		return result[T]{v: v, st: st, ch: ch}, err
	})
	if err != nil {
		l.countOff(r, true) // if the call still sets its watch, attach removes it
		return res.v, res.st, nil, err
	}
	e.s.stats.watchesSet.Add(1)
	return res.v, res.st, res.ch, nil
}
