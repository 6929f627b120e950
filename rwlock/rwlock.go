package rwlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// ErrUpgrade: the write lock was asked for while holding only the read
// lock (two readers doing it would deadlock).
var ErrUpgrade = errors.New("rwlock: upgrade from the read lock to the write lock is not supported (release the read lock first)")

// RWLock is a fair read/write lock shared by every process on the lock
// path: readers hold it together, a writer alone; the writer may take the
// read lock (downgrade), not the other way round (ErrUpgrade). Safe for
// concurrent use.
type RWLock struct {
	path string

	rq *queue.Queue // readers: "<host>-R-<seq>", NoneBefore("W")
	wq *queue.Queue // writers: "<host>-W-<seq>", First
	dq *queue.Queue // downgrades: "<host>-R-<seq>", granted at once

	read, write Lock

	mu     sync.Mutex       // guards owners and every field of the owners
	owners map[int64]*owner // by goroutine id; an entry exists while non-empty
}

// owner is what one goroutine holds through the handle; only it writes it (under mu).
type owner struct {
	r, w *hold       // nil when that side is not held
	kept *conn.Lease // our released write node, kept after a downgrade for a writer queued between
}

func (o *owner) side(write bool) **hold {
	if write {
		return &o.w
	}
	return &o.r
}

// hold is one goroutine's grant of one side.
type hold struct {
	lease  *conn.Lease
	count  int   // re-entries; >= 1
	passes int64 // of a write hold: the downgrades made under it (their Fence's Pass)
}

// WithHost sets the identity in this handle's node names, "<host>-R-<seq>":
// non-empty, no '/', only characters ZooKeeper accepts in a path, else New
// fails with conn.ErrInvalidArgument. Default: os.Hostname, each character
// ZooKeeper would reject replaced by '_'. Only rwlock.New takes it.
func WithHost(host string) lock.Option {
	return func(c *lockopt.Config) error {
		c.Given |= lockopt.Host
		c.Host = host
		return nil
	}
}

// New returns a handle on the read/write lock at path; the first acquire
// creates the path as container nodes. It takes WithHost and
// lock.WithRevocable; any other option fails with conn.ErrInvalidArgument.
func New(sess *conn.Session, path string, opts ...lock.Option) (*RWLock, error) {
	cfg, err := lockopt.Configure("rwlock.New", sess, path, lockopt.Revocable|lockopt.Host, opts)
	if err != nil {
		return nil, err
	}
	host := cfg.Host
	if cfg.Given&lockopt.Host == 0 {
		host = sanitizeHost(locknode.Hostname())
	}
	if err := validateHost(path, host); err != nil {
		return nil, fmt.Errorf("rwlock: new %s: %w", path, err)
	}
	rw := &RWLock{path: path, owners: make(map[int64]*owner)}
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
	rw.read = Lock{lockLink: connlink.NewLink(sess), rw: rw, q: rw.rq, write: false}
	rw.write = Lock{lockLink: connlink.NewLink(sess), rw: rw, q: rw.wq, write: true}
	return rw, nil
}

// sanitizeHost replaces each character ZooKeeper rejects in a path, and '/', by '_'.
func sanitizeHost(h string) string {
	h = strings.Map(func(r rune) rune {
		if r == '/' || zkpath.Validate("/x"+string(r)) != nil {
			return '_'
		}
		return r
	}, h)
	if h == "" {
		return "unknown"
	}
	return h
}

// validateHost checks that host makes valid node names under path.
func validateHost(path, host string) error {
	switch {
	case host == "":
		return fmt.Errorf("empty host: %w", conn.ErrInvalidArgument)
	case strings.Contains(host, "/"):
		return fmt.Errorf("host %q contains '/': %w", host, conn.ErrInvalidArgument)
	}
	if err := zkpath.Validate(zkpath.Join(path, host+"-W-0000000000")); err != nil {
		return fmt.Errorf("host %q makes a bad node name: %w", host, err)
	}
	return nil
}

// ReadLock is the shared side, held by any number of readers at once.
func (rw *RWLock) ReadLock() *Lock { return &rw.read }

// WriteLock is the exclusive side: held by one writer, with no reader.
func (rw *RWLock) WriteLock() *Lock { return &rw.write }

// Participants lists the readers' and writers' nodes in queue order, each
// Holding as the lock grants it. A snapshot.
func (rw *RWLock) Participants(ctx context.Context) ([]lock.Participant, error) {
	ps, err := rw.wq.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("rwlock: participants of %s: %w", rw.path, err)
	}
	ns := make([]locknode.RWNode, len(ps))
	for i, p := range ps {
		ns[i] = locknode.RWNode{Contender: p.Contender, Session: p.Session, Tag: p.Tag, ACLVersion: p.ACLVersion}
	}
	st := locknode.RWStatuses(ns)
	out := make([]lock.Participant, len(ps))
	for i, p := range ps {
		out[i] = p.Public(rw.path, st[i] == locknode.RWHolds)
	}
	return out, nil
}
