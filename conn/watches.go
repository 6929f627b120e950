package conn

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// # Removing a watch nobody waits on any more
//
// go-zookeeper v1.0.4 cannot remove a watch: a waiter that gives up would
// leave its watch on the server until the watched node changes. The
// session manager owns the wire (see wireConn), so it removes the watch
// itself with ZooKeeper's removeWatches request (3.5 and later): it counts,
// per epoch, the watchers of this session waiting on each (path, kind)
// (watchReg, made by GetW, ExistsW and ChildrenW), and when the last one
// stops waiting (Epoch.unwatch, reached through connlink.Epoch.Unwatch) on a
// watch that is set and has not fired, it writes a removeWatches request
// on the wire, as one frame between go-zookeeper's own, with an xid
// go-zookeeper never uses (negative), and takes its answer off the wire
// before go-zookeeper's reader could see it.
//
// Kinds follow the server's two watch tables: data (GetW and ExistsW) and
// child (ChildrenW). Two watchers of one session on one (path, kind) share
// one server watch, so it is removed only when neither waits.
//
// Order: the request is queued when the last watcher stops, and the queue
// is written before any frame go-zookeeper writes after that (and at once
// if go-zookeeper writes nothing), so a watch set again later on the same
// path (a new GetW, or the set-watches request of a reconnect) always
// reaches the server after the removal and is not removed by it.
//
// go-zookeeper keeps its own record of the watch (a channel in its
// watchers map that will never fire) and re-sends every path it records in
// the set-watches request of each reconnect, which would set the removed
// watch again on the new connection. So every set-watches frame is
// rewritten without the (path, kind) no watcher of ours waits on. That
// record, and this filtering, last until go-zookeeper forgets the path:
// when another watch on it fires, or when the epoch's zk.Conn is closed,
// which happens when the epoch ends; the memory is bounded by the watches
// set in one epoch.
//
// A removal written on a connection that breaks before the answer has
// succeeded all the same: the server drops a connection's watches with
// it, and the filter keeps them from coming back.

// watchKind is a server watch table, numbered as removeWatches'
// watcherType.
type watchKind int32

const (
	kindChild watchKind = 1 // ChildrenW
	kindData  watchKind = 2 // GetW, ExistsW
)

// watchKey is a server watch of this session: a full (namespaced) path and
// a table.
type watchKey struct {
	path string
	kind watchKind
}

// opRemoveWatches is ZooKeeper's removeWatches opcode; errNoWatcher its
// answer when there was nothing to remove.
const (
	opRemoveWatches       = 18
	errNoWatcher    int32 = -121
)

// Injected requests use xids in [removeXidBase-removeXidSpan+1,
// removeXidBase]: go-zookeeper uses only xids >= 0 and -2 (ping), and the
// server -1 for events.
const (
	removeXidBase = -0x10000000
	removeXidSpan = 0x10000000
)

// watchReg is one watcher: one successful GetW, ExistsW or ChildrenW (or
// one in flight).
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
// link.wmu, then watchSet.mu. The keys of live are the watches the Watches
// hook counts: a key's first watcher adds one, its last one counted off
// takes it away, told under mu so that the session's sum never goes below 0.
type watchSet struct {
	mu      sync.Mutex
	live    map[watchKey]int              // watchers not counted off, by key; no zero entries
	byCh    map[<-chan zk.Event]*watchReg // attached, not counted off, by the channel handed out
	queue   []*removal                    // not written yet
	pending map[int32]*removal            // written, answer not read
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

// attach records that r's call set its watch, and returns the channel to
// hand out (nil if r was stopped meanwhile: then the watch is removed). It
// forwards go-zookeeper's event so that a fired watch is counted off.
func (l *link) attach(r *watchReg, zch <-chan zk.Event) <-chan zk.Event {
	ws := &l.watches
	ws.mu.Lock()
	r.attached = true
	if r.done {
		// Abandoned while in flight (its caller gave up): nobody waits.
		var rm *removal
		if ws.live[r.key] == 0 {
			rm = l.queueRemovalLocked(r.key)
		}
		ws.mu.Unlock()
		if rm != nil {
			l.kick()
		}
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

// countOff counts r off; with stopped (r's watcher gave up), it also
// queues the removal of the server watch if r was the last watcher on it
// and the watch is set. Returns the removal, if any.
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

// queueRemovalLocked queues a removeWatches request for key. ws.mu held.
func (l *link) queueRemovalLocked(key watchKey) *removal {
	ws := &l.watches
	ws.next++
	rm := &removal{key: key, xid: int32(removeXidBase - int64(ws.next%removeXidSpan)), done: make(chan struct{})}
	ws.queue = append(ws.queue, rm)
	return rm
}

// kick writes the queued removals now if a connection with a session is
// up (otherwise go-zookeeper's next write on the next connection does). It
// runs on its own goroutine: a write can block while the connection is
// failing, and nobody should wait for that but the removal's caller.
func (l *link) kick() {
	go func() {
		l.wmu.Lock()
		defer l.wmu.Unlock()
		if w := l.cur.Load(); w != nil && !l.retired.Load() {
			if err := w.flushLocked(); err != nil {
				w.Conn.Close() // a frame may be cut: go-zookeeper reconnects
			}
		}
	}()
}

// flushLocked writes the queued removals on w. l.wmu held.
func (w *wireConn) flushLocked() error {
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
		if _, err := w.Conn.Write(encodeRemoveWatches(rm.xid, rm.key)); err != nil {
			return err
		}
		l.stats.watchesRemoved.Add(1)
	}
	return nil
}

// encodeRemoveWatches is int32 length, int32 xid, int32 opcode, string
// path, int32 watcherType.
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

// isRemovalXid tells an injected request's answer.
func isRemovalXid(xid int32) bool {
	return xid <= removeXidBase && xid > removeXidBase-removeXidSpan
}

// answered takes the answer to an injected request (int32 length, int32
// xid, int64 zxid, int32 err) off the wire.
func (l *link) answered(xid int32, f []byte) {
	ws := &l.watches
	ws.mu.Lock()
	rm := ws.pending[xid]
	delete(ws.pending, xid)
	ws.mu.Unlock()
	if rm == nil {
		return
	}
	var err error
	switch code := int32(binary.BigEndian.Uint32(f[16:])); code {
	case 0, errNoWatcher:
	default:
		err = fmt.Errorf("conn: removing the %s watch on %s: server error %d", rm.key.kind, rm.key.path, code)
	}
	rm.err = err
	close(rm.done)
}

// connGone completes the removals written on w, which is closed: the
// server dropped its watches with it.
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
}

// liveLocked tells whether a watcher of ours waits on key. ws.mu held.
func (ws *watchSet) liveLocked(key watchKey) bool { return ws.live[key] > 0 }

// filterSetWatches rewrites a set-watches request (int32 length, int32
// xid, int32 opcode, int64 relativeZxid, vector<string> dataWatches,
// existWatches, childWatches) without the paths no watcher of ours waits
// on. It returns f itself if nothing is dropped or f does not parse.
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
			if ws.liveLocked(watchKey{string(rest[4 : 4+m]), kind}) {
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

// unwatch tells the epoch that the watcher of ch (a channel GetW, ExistsW
// or ChildrenW returned) stopped waiting. If it was the last watcher of
// this session on that path and kind and the watch has not fired, the
// server watch is removed; unwatch waits for the server's answer, bounded
// by ctx and the epoch (the removal goes out all the same when ctx has
// ended). A channel already fired, or already stopped, costs nothing.
func (e *Epoch) unwatch(ctx context.Context, ch <-chan zk.Event) error {
	if e.wire == nil || ch == nil {
		return nil
	}
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
	l.kick()
	select {
	case <-rm.done:
		return rm.err
	case <-ctx.Done():
		return fmt.Errorf("conn: removing the %s watch on %s: %w", rm.key.kind, e.s.strip(rm.key.path), ctx.Err())
	case <-e.ctx.Done():
		return nil // the session's watches went with it
	}
}

// watchCall runs a watch-setting call (f returns go-zookeeper's channel
// when the watch is set) for the watcher count; see watchReg.
func watchCall[T any](ctx context.Context, e *Epoch, op, path string, kind watchKind,
	f func(*zk.Conn, string) (T, <-chan zk.Event, error)) (T, <-chan zk.Event, error) {
	if err := zkpath.Validate(path); err != nil {
		var zero T
		return zero, nil, fmt.Errorf("conn: %s: %w", op, err)
	}
	full := e.s.abs(path)
	l := e.wire
	r := l.register(watchKey{full, kind})
	res, err := callAbs(ctx, e, op, full, true, func(zc *zk.Conn, p string) (res3[T, <-chan zk.Event, struct{}], error) {
		v, zch, err := f(zc, p)
		var ch <-chan zk.Event
		if zch != nil {
			ch = l.attach(r, zch)
		}
		return res3[T, <-chan zk.Event, struct{}]{v, ch, struct{}{}}, err
	})
	if err != nil {
		// Failed, or given up while in flight: if the call still sets
		// its watch, attach removes it.
		if rm := l.countOff(r, true); rm != nil {
			l.kick()
		}
		return res.a, nil, err
	}
	e.s.stats.watchesSet.Add(1)
	return res.a, res.b, nil
}
