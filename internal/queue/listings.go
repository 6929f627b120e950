package queue

import (
	"context"
	"reflect"
	"slices"
	"sync"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// listings shares the listings of one session's waiters on one path and
// schema: one getChildren answers every waiter that joined its round. The
// latest is the session's view (docs/design.md). In the session's map while used.
type listings struct {
	sess  *conn.Session
	key   listingsKey
	mu    sync.Mutex
	next  map[*conn.Epoch]*round // each epoch's round gathering waiters
	busy  map[*conn.Epoch]bool   // the epoch's sender runs
	users int                    // the attempts joined
	dead  bool                   // out of the session's map
	view  view
}

// listingsKey: waiters share a listing only if they parse it alike.
type listingsKey struct {
	path   string
	schema locknode.Schema
}

// lists returns the session's listings for the queue (nil if none and not
// create), or the queue's own if the schema is not comparable.
func (q *Queue) lists(create bool) *listings {
	if !reflect.TypeOf(q.cfg.Schema).Comparable() {
		return q.own
	}
	key := listingsKey{q.path, q.cfg.Schema}
	m := connlink.Of(q.sess).Shared()
	if v, ok := m.Load(key); ok || !create {
		ls, _ := v.(*listings)
		return ls
	}
	v, _ := m.LoadOrStore(key, &listings{sess: q.sess, key: key})
	return v.(*listings)
}

// join returns the listings an attempt uses until it calls leave.
func (q *Queue) join() *listings {
	for {
		ls := q.lists(true)
		ls.mu.Lock()
		if !ls.dead {
			ls.users++
			ls.mu.Unlock()
			return ls
		}
		ls.mu.Unlock() // it left the map: the next lists makes new ones
	}
}

// leave ends an attempt's use of the listings.
func (ls *listings) leave() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.users--
	ls.idle()
}

// idle, under ls.mu, retires the listings once unused and not sending.
func (ls *listings) idle() {
	if ls.users > 0 || len(ls.busy) > 0 {
		return
	}
	ls.view = view{}
	if ls.sess != nil {
		ls.dead = true
		connlink.Of(ls.sess).Shared().CompareAndDelete(ls.key, ls)
	}
}

// install makes cs, the latest listing of ep, the view.
func (ls *listings) install(ep *conn.Epoch, cs []locknode.Contender) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.view = view{ep: ep, cs: cs, gone: make([]bool, len(cs))}
}

// round is one shared listing.
type round struct {
	ctx     context.Context // the request's; cancelled when no waiter is left
	cancel  context.CancelFunc
	waiters int                  // guarded by listings.mu
	done    chan struct{}        // closed when cs and err are set
	cs      []locknode.Contender // read-only once done
	err     error
}

// list returns the contenders in queue order from a listing sent after the
// call, shared: not to be modified.
func (ls *listings) list(ctx context.Context, ep *conn.Epoch) ([]locknode.Contender, error) {
	ls.mu.Lock()
	if ls.next == nil {
		ls.next, ls.busy = map[*conn.Epoch]*round{}, map[*conn.Epoch]bool{}
	}
	r := ls.next[ep]
	// A round whose waiters all left is replaced; one whose context ended
	// with the epoch is joined: its sender ends it with the epoch's error.
	if r == nil || r.waiters == 0 {
		rctx, cancel := context.WithCancel(connlink.Of(ep).Context())
		r = &round{ctx: rctx, cancel: cancel, done: make(chan struct{})}
		ls.next[ep] = r
	}
	r.waiters++
	if !ls.busy[ep] {
		ls.busy[ep] = true
		go ls.send(ep)
	}
	ls.mu.Unlock()
	select {
	case <-r.done:
		return r.cs, r.err
	case <-ctx.Done():
		ls.mu.Lock()
		if r.waiters--; r.waiters == 0 {
			r.cancel()
		}
		ls.mu.Unlock()
		return nil, bg.CtxErr(ctx)
	}
}

// send sends ep's rounds one after the other until none is waiting.
func (ls *listings) send(ep *conn.Epoch) {
	for {
		ls.mu.Lock()
		r := ls.next[ep]
		if r == nil {
			delete(ls.busy, ep)
			ls.idle()
			ls.mu.Unlock()
			return
		}
		delete(ls.next, ep)
		ls.mu.Unlock()
		names, _, err := connlink.Of(ep).Children(r.ctx, ls.key.path)
		if err == nil {
			r.cs = locknode.Parse(ls.key.schema, names)
			ls.install(ep, r.cs)
		}
		r.err = err
		r.cancel()
		close(r.done)
	}
}

// view is the latest listing of the path in one epoch and the departures
// learnt since. Guarded by listings.mu.
type view struct {
	ep   *conn.Epoch
	cs   []locknode.Contender // in queue order; shared: never modified
	gone []bool               // gone[i]: cs[i] is known to have left
	low  int                  // every cs[i] with i < low is known gone
}

// find returns the index of c in the view, or -1.
func (v *view) find(c locknode.Contender) int {
	if i, ok := slices.BinarySearchFunc(v.cs, c, locknode.Compare); ok {
		return i
	}
	return -1
}

// left records that node name of epoch ep was deleted (ls may be nil); a
// sequential node's name is never given again, so that stays true.
func (ls *listings) left(ep *conn.Epoch, name string) {
	if ls == nil {
		return
	}
	c, ok := ls.key.schema.Parse(name)
	if !ok {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	v := &ls.view
	if i := v.find(c); i >= 0 && v.ep == ep {
		v.gone[i] = true
		for v.low < len(v.cs) && v.gone[v.low] {
			v.low++
		}
	}
}

// before returns the view's contenders before self not known gone, and
// self, if the view is ep's and shows self (answered after its create);
// ok is false otherwise, when there are more than max, or ls is nil.
func (ls *listings) before(ep *conn.Epoch, self locknode.Contender, max int) (cs []locknode.Contender, ok bool) {
	if ls == nil {
		return nil, false
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	v := &ls.view
	s := v.find(self)
	if v.ep != ep || ep == nil || s < 0 || v.gone[s] {
		return nil, false
	}
	for i := v.low; i < s; i++ {
		if v.gone[i] {
			continue
		}
		if len(cs) == max {
			return nil, false
		}
		cs = append(cs, v.cs[i])
	}
	return append(cs, v.cs[s]), true
}

// prune returns cs without those the view knows gone, other than self: a
// new slice when it drops any (ls may be nil).
func (ls *listings) prune(ep *conn.Epoch, cs []locknode.Contender, self string) []locknode.Contender {
	if ls == nil {
		return cs
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	v := &ls.view
	if v.ep != ep || ep == nil {
		return cs
	}
	out, dropped := cs, false
	for i, c := range cs {
		j := v.find(c)
		switch gone := c.Name != self && j >= 0 && v.gone[j]; {
		case gone && !dropped:
			out, dropped = slices.Clone(cs[:i]), true
		case !gone && dropped:
			out = append(out, c)
		}
	}
	return out
}
