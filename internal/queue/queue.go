package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

// Config is a recipe's rule: what the engine needs to know of a recipe.
type Config struct {
	// Schema names our nodes and recognises contenders. Required.
	Schema locknode.Schema
	// Predicate decides who holds. Required.
	Predicate Predicate
	// Tag is written into every node's data (locknode.NodeData.Tag); a waiter
	// granted by a handover learns its holder's (Grant.From), so a recipe
	// can promise something to its own kind (semaphoremutex).
	Tag string
	// Data, if not nil, replaces locknode.NodeData in every node (Curator's
	// LeaderLatch: the participant id); the Schema must then put the
	// acquire id in the name, and Tag is not written. Such nodes are
	// released without the handover mark: LeaderLatch's waiters act on
	// deletions only, and a data change would consume their watch.
	Data []byte
}

// Options say how a queue's nodes are made and its grants reported: not
// part of the rule. The zero value is sealed nodes and no reports.
type Options struct {
	// Recipe names the recipe in its grants' reports of holds and losses
	// (the session's Lock hook); "" reports none until the recipe labels a
	// grant (semaphoremutex's internal lock). Waits are the recipe's to
	// report (report.Meter).
	Recipe string
	// Revocable gives the nodes the session's ACL as it is instead of
	// sealing them, so that lock.Revoke and Curator's Revoker can write into
	// them; a data change then proves nothing, and release is a plain delete.
	Revocable bool
	// Relist lists the children again after every notification, as Curator
	// and zk.Lock do: for the benchmarks.
	Relist bool
}

// dataProbe is an acquire id New looks for in a schema's prefix.
const dataProbe = "00000000-0000-4000-8000-000000000000"

// Grant is a granted node and how it was granted.
type Grant struct {
	// Lease is the granted node's.
	Lease *conn.Lease
	// HandedOver: granted by a First holder's release (ReleaseOps) of the
	// node right before ours; From is that node's data, read when we began
	// to watch it.
	HandedOver bool
	From       locknode.NodeData
}

// Queue is one sequential-node queue: a lock path and the recipe's rule.
// Safe for concurrent use.
type Queue struct {
	sess *conn.Session
	path string
	cfg  Config
	opt  Options
	log  *zap.Logger
	own  *listings // for a schema that cannot be a key of the session's (lists)
}

// New returns the queue of the lock at path. Path must be a valid absolute
// path (zkpath.Validate); it and its parents are created on first use as
// container nodes, which ZooKeeper removes when they are empty.
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

// Sealed reports whether the queue's nodes are sealed (not
// Options.Revocable).
func (q *Queue) Sealed() bool { return !q.opt.Revocable }

// NodeACL is the ACL of the queue's nodes: sealed (nobody else can forge
// the handover mark) or, if Revocable, the session's.
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
// node is deleted (bg.Settle). A grant at the moment ctx ended is given up.
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

// AcquireGrant is Acquire (wait true) or TryAcquire (wait false, a zero
// Grant when not granted at once) that also says how the node was granted.
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
		if err != nil {
			return Grant{}, err
		}
		return g, nil
	}
}
