package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Kinds of node, as the command prints them.
const (
	kindMutex     = "mutex"
	kindRead      = "read"
	kindWrite     = "write"
	kindLease     = "semaphore lease"
	kindSemLock   = "semaphore lock"
	kindLeader    = "leader"
	statusHolds   = "holds"
	statusNext    = "next" // holds a semaphore's internal lock, waits for a lease
	statusWaits   = "waits"
	statusKept    = "kept" // a write node kept after a downgrade's write release
	statusLeads   = "leads"
	statusFollows = "follows"
)

// The recipes' node names (shared/DESIGN.md, "Node names"), parsed by the
// library's own parser.
var (
	lockSchema  = locknode.ProtectedSchema{Name: "lock"}
	leaseSchema = locknode.ProtectedSchema{Name: "lease"}
	latchSchema = locknode.ProtectedSchema{Name: "latch"}
	rwSchema    = locknode.HostKindSchema{}
)

// soleLeaseTag is the tag semaphoremutex writes into the internal lock
// node of a one-lease semaphore that may hold the lease without a lease
// node (semaphoremutex's soleLeaseTag).
const soleLeaseTag = "sole-lease"

// Node is one contender: a node of a lock queue.
type Node struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Kind    string    `json:"kind"`
	Status  string    `json:"status"` // holds, next, waits, kept; leads, follows
	Seq     int32     `json:"seq"`
	Session string    `json:"session"` // ephemeralOwner, 0x%x
	Created time.Time `json:"created"` // ctime (the server's clock)
	Owner   Owner     `json:"owner"`
}

// Queue is one lock (or election) and its contenders, in queue order:
// holders first.
type Queue struct {
	Path   string `json:"path"`
	Recipe string `json:"recipe"` // mutex, rwlock, semaphore, leader
	Nodes  []Node `json:"nodes"`
}

// raw is one child as read: its name and what its node holds.
type raw struct {
	c    locknode.Contender
	data []byte
	stat *zk.Stat
}

// scanner reads the tree with one epoch, and, when watch is set, leaves a
// child watch on every node it lists (or an exists watch on a missing
// root): any change of the queues under the root fires one of them.
type scanner struct {
	ep      *conn.Epoch
	watch   bool
	leader  bool // only the LeaderLatch nodes right under the root
	watches []<-chan zk.Event
}

// errNoPath is a root that does not exist.
var errNoPath = errors.New("no such path")

// errOtherRecipe: leader on a path that holds another recipe's queue.
var errOtherRecipe = errors.New("not an election")

// notElection returns errOtherRecipe if p, with no election's node, holds
// another recipe's contenders (a mutex's are also Curator's LeaderSelector's).
func (s *scanner) notElection(ctx context.Context, p string, names []string) error {
	what := ""
	switch {
	case len(locknode.Parse(lockSchema, names)) > 0:
		what = "mutex"
	case len(locknode.Parse(rwSchema, names)) > 0:
		what = "read/write lock"
	default:
		if _, ok, err := s.semaphore(ctx, p, names); err != nil {
			return err
		} else if ok {
			what = "semaphore"
		}
	}
	if what == "" {
		return nil
	}
	return fmt.Errorf("%s holds a %s's nodes, not an election's (zkrecipes locks %s shows them): %w", p, what, p, errOtherRecipe)
}

// scan returns every queue under root (root included), sorted by path.
func (s *scanner) scan(ctx context.Context, root string) ([]Queue, error) {
	names, err := s.children(ctx, root)
	if errors.Is(err, zk.ErrNoNode) {
		if s.watch {
			ok, _, w, err := connlink.Of(s.ep).ExistsW(ctx, root)
			if err != nil {
				return nil, err
			}
			s.watches = append(s.watches, w)
			if ok { // created meanwhile
				return s.scan(ctx, root)
			}
		}
		return nil, fmt.Errorf("%s: %w", root, errNoPath)
	}
	if err != nil {
		return nil, err
	}
	var out []Queue
	if err := s.walk(ctx, root, names, &out); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Queue) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (s *scanner) children(ctx context.Context, p string) ([]string, error) {
	if !s.watch {
		names, _, err := connlink.Of(s.ep).Children(ctx, p)
		return names, err
	}
	names, _, w, err := connlink.Of(s.ep).ChildrenW(ctx, p)
	if err == nil {
		s.watches = append(s.watches, w)
	}
	return names, err
}

// walk finds the queues at p (whose children are names) and below it.
func (s *scanner) walk(ctx context.Context, p string, names []string, out *[]Queue) error {
	contender := map[string]bool{}
	if s.leader {
		cs := locknode.Parse(latchSchema, names)
		nodes, err := s.read(ctx, p, cs)
		if err != nil {
			return err
		}
		if len(nodes) > 0 {
			*out = append(*out, decide(p, "leader", nodes))
			return nil
		}
		return s.notElection(ctx, p, names)
	}
	if q, ok, err := s.semaphore(ctx, p, names); err != nil {
		return err
	} else if ok {
		*out = append(*out, q)
		contender["locks"], contender["leases"] = true, true
	}
	for _, k := range []struct {
		recipe string
		schema locknode.Schema
	}{{"leader", latchSchema}, {"mutex", lockSchema}, {"rwlock", rwSchema}} {
		cs := locknode.Parse(k.schema, names)
		if len(cs) == 0 {
			continue
		}
		for _, c := range cs {
			contender[c.Name] = true
		}
		nodes, err := s.read(ctx, p, cs)
		if err != nil {
			return err
		}
		if len(nodes) > 0 {
			*out = append(*out, decide(p, k.recipe, nodes))
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if contender[n] {
			continue // lock nodes have no children
		}
		child := zkpath.Join(p, n)
		if child == "/zookeeper" {
			continue // the server's own
		}
		grand, err := s.children(ctx, child)
		if errors.Is(err, zk.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return err
		}
		if err := s.walk(ctx, child, grand, out); err != nil {
			return err
		}
	}
	return nil
}

// semaphore recognises p as a semaphore and reads it: a leases/ child
// whose children are all lease nodes, or, without one, a locks/ child
// whose first node is a one-lease semaphore of ours holding the lease (its
// tag says so); in both, locks/ (if any) holds only internal lock nodes.
// Anything else is walked as a tree: a mutex may well be called "locks".
func (s *scanner) semaphore(ctx context.Context, p string, names []string) (Queue, bool, error) {
	hasLeases, hasLocks := slices.Contains(names, "leases"), slices.Contains(names, "locks")
	if !hasLeases && !hasLocks {
		return Queue{}, false, nil
	}
	var leases, locks []raw
	for _, d := range []struct {
		name   string
		has    bool
		schema locknode.Schema
		into   *[]raw
	}{{"leases", hasLeases, leaseSchema, &leases}, {"locks", hasLocks, lockSchema, &locks}} {
		if !d.has {
			continue
		}
		dir := zkpath.Join(p, d.name)
		kids, err := s.children(ctx, dir)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return Queue{}, false, err
		}
		cs := locknode.Parse(d.schema, kids)
		if len(cs) != len(kids) {
			return Queue{}, false, nil // something else: walk it as a tree
		}
		if *d.into, err = s.read(ctx, dir, cs); err != nil {
			return Queue{}, false, err
		}
	}
	soleLease := false
	if len(locks) > 0 {
		d, ok := locknode.DecodeData(locks[0].data)
		soleLease = ok && d.Tag == soleLeaseTag
	}
	if !hasLeases && !soleLease || len(leases)+len(locks) == 0 {
		return Queue{}, false, nil
	}
	q := Queue{Path: p, Recipe: "semaphore"}
	for _, r := range leases {
		q.Nodes = append(q.Nodes, node(zkpath.Join(p, "leases"), kindLease, statusHolds, r))
	}
	for i, r := range locks {
		st := statusWaits
		switch {
		case i == 0 && soleLease && len(leases) == 0:
			// A one-lease semaphore of ours holds the lease with its
			// internal lock node when no lease node exists.
			st = statusHolds
		case i == 0:
			st = statusNext
		}
		q.Nodes = append(q.Nodes, node(zkpath.Join(p, "locks"), kindSemLock, st, r))
	}
	return q, true, nil
}

// read reads the data and stat of the contenders in dir; those that left
// meanwhile are left out.
func (s *scanner) read(ctx context.Context, dir string, cs []locknode.Contender) ([]raw, error) {
	out := make([]raw, 0, len(cs))
	for _, c := range cs {
		b, st, err := connlink.Of(s.ep).Get(ctx, zkpath.Join(dir, c.Name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, raw{c: c, data: b, stat: st})
	}
	return out, nil
}

// decide says who holds, by the rules the recipes use: the predicate each
// recipe waits on (queue.First for the mutex and the leader), and for the
// read/write lock rwlock's own rule (locknode.RWStatuses: readers until the
// first writer, a downgrade's read node, a write node kept for it).
func decide(p, recipe string, rs []raw) Queue {
	if recipe == "rwlock" {
		return decideRW(p, rs)
	}
	cs := make([]locknode.Contender, len(rs))
	for i, r := range rs {
		cs[i] = r.c
	}
	q := Queue{Path: p, Recipe: recipe}
	for i, r := range rs {
		kind := kindMutex
		if recipe == "leader" {
			kind = kindLeader
		}
		held, _ := queue.First.Decide(cs, i)
		st := statusWaits
		switch {
		case recipe == "leader" && held:
			st = statusLeads
		case recipe == "leader":
			st = statusFollows
		case held:
			st = statusHolds
		}
		q.Nodes = append(q.Nodes, node(p, kind, st, r))
	}
	return q
}

// decideRW is decide for a read/write lock, as rwlock.RWLock.Participants.
func decideRW(p string, rs []raw) Queue {
	ns := make([]locknode.RWNode, len(rs))
	for i, r := range rs {
		ns[i] = locknode.RWNode{Contender: r.c, Session: r.stat.EphemeralOwner, ACLVersion: r.stat.Aversion}
		if ours(r.data) {
			d, _ := locknode.DecodeData(r.data)
			ns[i].Tag = d.Tag
		}
	}
	q := Queue{Path: p, Recipe: "rwlock"}
	for i, s := range locknode.RWStatuses(ns) {
		kind := kindWrite
		if rs[i].c.Kind == "R" {
			kind = kindRead
		}
		st := statusWaits
		switch s {
		case locknode.RWHolds:
			st = statusHolds
		case locknode.RWKept:
			st = statusKept
		}
		q.Nodes = append(q.Nodes, node(p, kind, st, rs[i]))
	}
	return q
}

func node(dir, kind, status string, r raw) Node {
	return Node{
		Name:    r.c.Name,
		Path:    zkpath.Join(dir, r.c.Name),
		Kind:    kind,
		Status:  status,
		Seq:     r.c.Seq,
		Session: fmt.Sprintf("0x%x", r.stat.EphemeralOwner),
		Created: time.UnixMilli(r.stat.Ctime).UTC(),
		Owner:   ownerOf(kind, r.c, r.data),
	}
}
