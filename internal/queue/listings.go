package queue

import (
	"context"
	"reflect"
	"sync"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// listings shares the listings of one session's waiters on one lock path
// (whatever their handles: all Queues of the session with that path and
// schema): a waiter that needs
// a listing sent after its create joins the next round, and one
// getChildren, sent once the round is closed, answers every waiter of the
// round. A round is closed when it is sent, and only waiters that joined
// before that take its answer: each of them joined after its own create
// was written (prelist) or answered (list), so the listing is answered
// after their creates (ZooKeeper answers a session's requests in order)
// and shows their nodes. While a round is in flight the next one gathers
// waiters, so N waiters of one session queued at once cost a few listings,
// not N, and the server sends each name a few times, not N/2 times on
// average. The answer is parsed once and shared: nobody may modify it.
//
// Rounds are per epoch (a listing is good only for its own session). A
// round whose waiters all left before its answer came is cancelled. The
// listings live in the session's shared map (connlink.Session.Shared)
// while a round is pending or in flight, and leave it when none is.
type listings struct {
	sess *conn.Session
	key  listingsKey
	mu   sync.Mutex
	// next is the round of each epoch gathering waiters; busy says that
	// the epoch's sender goroutine runs (a round of it is in flight).
	next map[*conn.Epoch]*round
	busy map[*conn.Epoch]bool
}

// listingsKey is the key of a path's listings in the session's shared
// map: waiters share a listing only if they parse it alike.
type listingsKey struct {
	path   string
	schema Schema
}

// lists returns the listings the queue's waiters join: the session's for
// the queue's path and schema, or, if the schema cannot be a map key (not
// comparable), the queue's own.
func (q *Queue) lists() *listings {
	if !reflect.TypeOf(q.cfg.Schema).Comparable() {
		return q.own
	}
	key := listingsKey{q.path, q.cfg.Schema}
	m := connlink.Of(q.sess).Shared()
	if v, ok := m.Load(key); ok {
		return v.(*listings)
	}
	v, _ := m.LoadOrStore(key, &listings{sess: q.sess, key: key})
	return v.(*listings)
}

// round is one shared listing.
type round struct {
	ctx     context.Context // the request's; cancelled when no waiter is left
	cancel  context.CancelFunc
	waiters int           // guarded by listings.mu
	done    chan struct{} // closed when cs and err are set
	cs      []Contender   // read-only once done
	err     error
}

// list returns the contenders of the queue, in queue order, from a
// listing sent after the call, shared with the other waiters of the same
// round: the caller must not modify the slice.
func (ls *listings) list(ctx context.Context, ep *conn.Epoch) ([]Contender, error) {
	ls.mu.Lock()
	if ls.next == nil {
		ls.next, ls.busy = map[*conn.Epoch]*round{}, map[*conn.Epoch]bool{}
	}
	r := ls.next[ep]
	if r == nil || r.ctx.Err() != nil { // none, or one all of whose waiters left
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
		return nil, CtxErr(ctx)
	}
}

// send sends ep's rounds one after the other until none is waiting.
func (ls *listings) send(ep *conn.Epoch) {
	for {
		ls.mu.Lock()
		r := ls.next[ep]
		if r == nil {
			delete(ls.busy, ep)
			if len(ls.busy) == 0 && len(ls.next) == 0 && ls.sess != nil {
				// Idle: leave the map (a waiter that still holds ls may
				// join it again: it then runs on its own, as correctly).
				connlink.Of(ls.sess).Shared().CompareAndDelete(ls.key, ls)
			}
			ls.mu.Unlock()
			return
		}
		delete(ls.next, ep)
		ls.mu.Unlock()
		names, _, err := ep.Children(r.ctx, ls.key.path)
		if err == nil {
			r.cs = Parse(ls.key.schema, names)
		}
		r.err = err
		r.cancel()
		close(r.done)
	}
}
