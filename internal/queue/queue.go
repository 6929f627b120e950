package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"go.uber.org/zap"
)

var (
	// ErrBadRecipe: a bug in the recipe's Schema or Predicate.
	ErrBadRecipe = errors.New("queue: recipe bug")
	// errRestart: the epoch ended under an attempt: start over. Internal.
	errRestart = errors.New("queue: epoch ended; restart")
)

const dataProbe = "00000000-0000-4000-8000-000000000000" // an acquire id New looks for in a schema's prefix

// Config is a recipe's rule: what the engine needs to know of a recipe.
type Config struct {
	Schema    locknode.Schema // names our nodes and recognises contenders; required
	Predicate Predicate       // decides who holds; required
	// Tag is written into every node's data; a waiter granted by a
	// handover learns its holder's (Grant.From).
	Tag string
	// Data, if not nil, replaces locknode.NodeData (a leader's id); the
	// Schema must then put the acquire id in the name. No handover mark.
	Data []byte
}

// Options say how a queue's nodes are made and its grants reported. The
// zero value is sealed nodes and no reports.
type Options struct {
	// Recipe names the recipe in its grants' reports of holds and losses
	// ("": none until the recipe labels a grant). Waits are the recipe's.
	Recipe string
	// Revocable gives the nodes the session's ACL instead of sealing them,
	// so that lock.Revoke can write into them; release is a plain delete.
	Revocable bool
	Relist    bool // list again after every notification, as Curator does: for the benchmarks
	// LocalHandoff marks the nodes' data as passed on in the process
	// without a write (lock.WithLocalHandoff), for Participants.
	LocalHandoff bool
}

// Grant is a granted node; HandedOver by a First holder's release of the
// node right before ours, whose data is From.
type Grant struct {
	Lease      *conn.Lease
	HandedOver bool
	From       locknode.NodeData
}

// Queue is one sequential-node queue: a lock path and the recipe's rule.
type Queue struct {
	sess *conn.Session
	path string
	cfg  Config
	opt  Options
	log  *zap.Logger
	own  *listings // for a schema that cannot be a key of the session's (lists)
}

// New returns the queue of the lock at path; it and its parents are
// created on first use as container nodes.
func New(sess *conn.Session, path string, cfg Config, opt Options) (*Queue, error) {
	switch {
	case sess == nil:
		return nil, errors.New("queue: nil session")
	case cfg.Schema == nil || cfg.Predicate.Decide == nil:
		return nil, fmt.Errorf("%w: Config needs a locknode.Schema and a Predicate", ErrBadRecipe)
	case cfg.Data != nil && !strings.Contains(cfg.Schema.Prefix(dataProbe), dataProbe):
		return nil, fmt.Errorf("%w: Config.Data needs a locknode.Schema that puts the acquire id in the name", ErrBadRecipe)
	}
	if err := zkpath.Validate(path); err != nil {
		return nil, fmt.Errorf("queue: lock path: %w", err)
	}
	q := &Queue{sess: sess, path: path, cfg: cfg, opt: opt, log: connlink.Of(sess).Logger().With(zap.String("lock", path))}
	q.own = &listings{key: listingsKey{path: path, schema: cfg.Schema}}
	return q, nil
}

// Path is the lock path: the parent of the contenders' nodes.
func (q *Queue) Path() string { return q.path }

// Sealed reports whether the queue's nodes are sealed (not Revocable).
func (q *Queue) Sealed() bool { return !q.opt.Revocable }

// NodeACL is the ACL of the queue's nodes: sealed, or if Revocable the session's.
func (q *Queue) NodeACL() []zk.ACL {
	if q.opt.Revocable {
		return connlink.Of(q.sess).ACL()
	}
	return connlink.Of(q.sess).SealedACL()
}

// Session is the session the queue's nodes are created in.
func (q *Queue) Session() *conn.Session { return q.sess }

// Acquire queues a new node and waits until the predicate grants it or ctx
// ends, starting over if the epoch ends. On error nothing is held and our
// node is deleted (bg.Settle).
func (q *Queue) Acquire(ctx context.Context) (*conn.Lease, error) {
	g, err := q.AcquireGrant(ctx, true)
	return g.Lease, err
}

// TryAcquire returns the lease if the predicate grants a new node at once;
// otherwise it deletes the node and returns (nil, false, nil).
func (q *Queue) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	g, err := q.AcquireGrant(ctx, false)
	return g.Lease, g.Lease != nil, err
}

// AcquireGrant is Acquire (wait true) or TryAcquire (wait false: a zero
// Grant when not granted at once), saying how the node was granted.
func (q *Queue) AcquireGrant(ctx context.Context, wait bool) (Grant, error) {
	if q.cfg.Data == nil { // fixed data (a leader's id) carries no label
		if _, err := locknode.Label(ctx); err != nil {
			return Grant{}, err // before anything is queued
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return Grant{}, bg.CtxErr(ctx)
		}
		ep, err := connlink.Of(q.sess).Epoch(ctx)
		if err != nil {
			return Grant{}, err
		}
		a := &attempt{q: q, ep: ep, id: locknode.NewID(), ls: q.join()}
		g, err := a.run(ctx, wait)
		a.ls.leave()
		if errors.Is(err, errRestart) {
			q.log.Debug("session lost while acquiring; starting over", logfield.Session("session", ep.SessionID()))
			continue
		}
		return g, err
	}
}

// Predicate is a recipe's decision: from the contenders in queue order and
// the index of ours, whether we hold the lock or else which contender
// before ours to watch. Decide is pure and must meet docs/design.md, "What
// a predicate must satisfy".
type Predicate struct {
	Decide func(contenders []locknode.Contender, self int) (acquired bool, watch string)
	first  bool // First's: a holder's release can hand over (ReleaseOps)
}

// First is mutual exclusion: acquired when first, else watch the
// predecessor. Its releases leave the handover mark.
var First = Predicate{first: true, Decide: func(contenders []locknode.Contender, self int) (bool, string) {
	if self == 0 {
		return true, ""
	}
	return false, contenders[self-1].Name
}}

// NoneBefore returns the predicate "acquired when no contender of kind is
// before ours; otherwise watch the nearest one" (a reader: NoneBefore("W")).
func NoneBefore(kind string) Predicate {
	return Predicate{Decide: func(contenders []locknode.Contender, self int) (bool, string) {
		for i := self - 1; i >= 0; i-- {
			if contenders[i].Kind == kind {
				return false, contenders[i].Name
			}
		}
		return true, ""
	}}
}

// index returns the position of the contender named name, or -1.
func index(cs []locknode.Contender, name string) int {
	// A listing is in queue order: search it, so that thousands of waiters
	// sharing one listing do not scan it each (a cut-down cache may not be
	// in order: the scan below finds what the search missed).
	if _, seq, ok := locknode.SplitSeq(name); ok && len(cs) > 16 {
		i, _ := slices.BinarySearchFunc(cs, locknode.Contender{Name: name, Seq: seq}, locknode.Compare)
		if i < len(cs) && cs[i].Name == name {
			return i
		}
	}
	return slices.IndexFunc(cs, func(c locknode.Contender) bool { return c.Name == name })
}

// remove returns cs without name: a new slice, since cs may be shared.
func remove(cs []locknode.Contender, name string) []locknode.Contender {
	if i := index(cs, name); i >= 0 {
		return slices.Concat(cs[:i], cs[i+1:])
	}
	return cs
}

// Participant is one contender as Participants reports it; Known (and Tag,
// Label, Handoff, Host, PID) when the data is this engine's.
type Participant struct {
	locknode.Contender
	Host       string
	PID        int
	Known      bool
	Tag        string
	Label      string
	Handoff    bool  // the data's: ID and Label are the node's first holder's
	Session    int64 // the ephemeralOwner
	ACLVersion int32
}

// Public is p as a recipe reports it: its node under dir, holding or not.
func (p Participant) Public(dir string, holding bool) lock.Participant {
	return lock.Participant{Node: zkpath.Join(dir, p.Name), Holding: holding, Seq: p.Seq, ID: p.ID,
		Host: p.Host, PID: p.PID, Known: p.Known, Label: p.Label, LocalHandoff: p.Handoff}
}

// Participants lists the contenders in queue order with who they are;
// nodes that leave meanwhile are left out. Errors are the session's.
func (q *Queue) Participants(ctx context.Context) ([]Participant, error) {
	ep, err := connlink.Of(q.sess).Epoch(ctx)
	if err != nil {
		return nil, err
	}
	names, _, err := connlink.Of(ep).Children(ctx, q.path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cs := locknode.Parse(q.cfg.Schema, names)
	out := make([]Participant, 0, len(cs))
	for _, c := range cs {
		b, st, err := connlink.Of(ep).Get(ctx, zkpath.Join(q.path, c.Name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p := Participant{Contender: c, Session: st.EphemeralOwner, ACLVersion: st.Aversion}
		if d, ok := locknode.DecodeData(b); ok {
			p.Host, p.PID, p.Known, p.Tag, p.Label, p.Handoff = d.Host, d.PID, true, d.Tag, d.Label, d.Handoff
			if p.ID == "" { // the name's uuid is the id; data can be copied
				p.ID = d.ID
			}
		}
		out = append(out, p)
	}
	return out, nil
}
