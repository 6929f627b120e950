package rwlock

import (
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/lockid"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/lock"
)

// RWLock is a fair read/write lock shared by every process on the lock
// path: readers hold it together, a writer alone. Both sides are reentrant
// per goroutine; the write lock's holder may take the read lock
// (downgrade), not the other way round (ErrUpgrade). Holding either side
// is a lease on the session, not a promise: watch Lease.Lost and fence
// writes. Safe for concurrent use.
type RWLock struct {
	path string
	host string

	rq *queue.Queue // readers: "<host>-R-<seq>", NoneBefore("W")
	wq *queue.Queue // writers: "<host>-W-<seq>", First
	dq *queue.Queue // downgrades: "<host>-R-<seq>", granted at once

	read, write Lock

	mu     sync.Mutex       // guards owners and every field of the owners
	owners map[int64]*owner // by goroutine id; an entry exists while non-empty
}

// owner is what one goroutine holds through the handle. Only that
// goroutine changes it (under RWLock.mu); others only read it (under mu).
type owner struct {
	r, w *hold // nil when that side is not held

	// kept is our write node, its lease released, kept after a downgrade
	// so that a writer queued before our read node stays out while we read.
	kept *conn.Lease
}

func (o *owner) side(write bool) *hold {
	if write {
		return o.w
	}
	return o.r
}

func (o *owner) empty() bool { return o.r == nil && o.w == nil && o.kept == nil }

// hold is one goroutine's grant of one side.
type hold struct {
	lease  *conn.Lease
	count  int   // re-entries; >= 1
	passes int64 // of a write hold: the downgrades made under it (their Fence's Pass)
}

// New returns a handle on the read/write lock at path. Nothing is created
// until the first acquire, which creates the path as container nodes. It
// takes WithHost and lock.WithRevocable; any other option fails with an
// error matching conn.ErrInvalidArgument.
func New(sess *conn.Session, path string, opts ...lock.Option) (*RWLock, error) {
	cfg, err := lockopt.Configure("rwlock.New", sess, path, lockopt.Revocable|lockopt.Host, opts)
	if err != nil {
		return nil, err
	}
	host := cfg.Host
	if cfg.Given&lockopt.Host == 0 {
		host = defaultHost()
	}
	if err := validateHost(path, host); err != nil {
		return nil, fmt.Errorf("rwlock: new %s: %w", path, err)
	}
	rw := &RWLock{path: path, host: host, owners: make(map[int64]*owner)}
	for _, q := range []struct {
		q      **queue.Queue
		kind   string
		decide queue.Predicate
		tag    string
	}{
		{&rw.rq, "R", queue.NoneBefore("W"), ""},
		{&rw.wq, "W", queue.First, ""},                   // the only First queue: its releases hand over
		{&rw.dq, "R", downgraded, locknode.DowngradeTag}, // the tag tells Participants and zkrecipes
	} {
		var err error
		*q.q, err = queue.New(sess, path, queue.Config{
			Schema:    locknode.HostKindSchema{Host: host, Kind: q.kind},
			Predicate: q.decide,
			Tag:       q.tag,
		}, queue.Options{Recipe: "rwlock", Revocable: cfg.Revocable})
		if err != nil {
			return nil, fmt.Errorf("rwlock: %w", err)
		}
	}
	rw.read = Lock{lockLink: lockid.NewLink(sess), rw: rw, write: false}
	rw.write = Lock{lockLink: lockid.NewLink(sess), rw: rw, write: true}
	return rw, nil
}

// ReadLock is the shared side: held by any number of readers at once,
// never together with another process's write lock.
func (rw *RWLock) ReadLock() *Lock { return &rw.read }

// WriteLock is the exclusive side: held by one writer, with no reader.
func (rw *RWLock) WriteLock() *Lock { return &rw.write }

// tidy drops goroutine gid's entry once it holds nothing. Called with mu.
func (rw *RWLock) tidy(gid int64, o *owner) {
	if o.empty() {
		delete(rw.owners, gid)
	}
}

// heldBy reports whether any goroutine holds the given side through this
// handle. Called with mu.
func (rw *RWLock) heldBy(write bool) bool {
	for _, o := range rw.owners {
		if o.side(write) != nil {
			return true
		}
	}
	return false
}
