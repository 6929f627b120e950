package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// schema is the naming of the election's nodes: Curator LeaderLatch's
// protected sequential "_c_<uuid>-latch-<seq>".
var schema = queue.ProtectedSchema{Name: "latch"}

// Election is one participant in the leader election at a path, shared by
// every process that elects on the same path of the same ensemble, Curator's
// LeaderLatch included. One handle is one participant: it campaigns, leads
// and resigns at most once at a time. Safe for concurrent use.
type Election struct {
	sess *conn.Session
	q    *queue.Queue
	id   string
	cfg  config

	mu          sync.Mutex    // guards the fields below
	campaigning bool          // a Campaign is under way
	resigning   chan struct{} // non-nil while a Resign is under way; closed when it ends
	lease       *conn.Lease   // while we lead (possibly lost: see Lost)
}

// New returns participant id's handle on the election at path. Nothing is
// created until Campaign; the path and its parents are then created as
// container nodes, which ZooKeeper removes when they are empty. id is
// written into our node (Curator's LeaderLatch id) and is what Leader and
// Participants report; it need not be unique, but should be.
func New(sess *conn.Session, path, id string, opts ...Option) (*Election, error) {
	var cfg config
	if err := queue.Configure("leader", sess, path, &cfg, opts); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, fmt.Errorf("leader: new %s: empty participant id: %w", path, conn.ErrInvalidArgument)
	}
	// No handover mark (MarkRelease): Curator's LeaderLatch waiter reacts
	// to the deletion of its predecessor only, and a mark would consume its
	// one-shot watch with a data change it ignores.
	q, err := queue.New(sess, path, queue.Config{
		Schema: schema,
		Recipe: "leader",
		Decide: queue.First,
		Data:   []byte(id),
		// lead meters a campaign once, however many nodes it queues
		Unmetered: true,
	})
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	return &Election{sess: sess, q: q, id: id, cfg: cfg}, nil
}

// path is the election path.
func (e *Election) path() string { return e.q.Path() }

// ID is our participant id.
func (e *Election) ID() string { return e.id }

// Campaign queues our node and blocks until we lead or ctx ends; a deadline
// on ctx is the timeout. It returns the leadership as a lease: watch Lost,
// fence with Fence, write with GuardedWrite; Resign ends it. A node deleted
// by someone else while we waited is not led from (Campaign queues again).
// On error nothing is left behind, and the error wraps ctx's or the
// session's; ErrCampaigning when this handle already campaigns or leads.
func (e *Election) Campaign(ctx context.Context) (*conn.Lease, error) {
	return e.campaign(ctx, true)
}

// campaign is Campaign, or with wait false one attempt (nil, nil when
// someone else leads).
func (e *Election) campaign(ctx context.Context, wait bool) (*conn.Lease, error) {
	if err := e.begin(ctx); err != nil {
		return nil, err
	}
	l, err := e.lead(ctx, wait)
	e.mu.Lock()
	e.campaigning = false
	if err == nil && l != nil {
		e.lease = l
	}
	e.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("leader: campaign %s: %w", e.path(), err)
	}
	return l, nil
}

// lead queues our node and waits until it is first (nil, nil if someone
// else leads and wait is false), then confirms through the lease's Fence
// (a read, unless the queue made one) that the node still exists: the
// queue grants a node deleted while it waited, whose successor already
// leads. A node gone is queued again.
func (e *Election) lead(ctx context.Context, wait bool) (l *conn.Lease, err error) {
	done := queue.Meter(e.sess, "leader", e.path())
	defer func() { done(l != nil, err) }()
	for {
		g, err := e.q.AcquireGrant(ctx, wait)
		if err != nil || g.Lease == nil {
			return nil, err
		}
		_, err = g.Lease.Fence(ctx)
		if err == nil {
			return g.Lease, nil
		}
		rerr := e.q.Release(ctx, g.Lease) // gone: nothing to do; else delete it
		if !errors.Is(err, conn.ErrLeaseLost) {
			if ctx.Err() != nil {
				err = queue.CtxErr(ctx)
			}
			return nil, errors.Join(err, rerr)
		}
		connlink.Of(e.sess).Logger().Info("leader: our node was gone when we were to lead; campaigning again",
			zap.String("path", e.path()), zap.Error(err), zap.NamedError("release", rerr))
	}
}

// begin marks a campaign under way, after a Resign still under way has
// ended (Run requeues while a Resign from another goroutine may still be
// deleting the node). A lost leadership still recorded is dropped (its node
// deleted if it is still there).
func (e *Election) begin(ctx context.Context) error {
	e.mu.Lock()
	for e.resigning != nil {
		done := e.resigning
		e.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("leader: campaign %s: %w", e.path(), queue.CtxErr(ctx))
		}
		e.mu.Lock()
	}
	if e.campaigning || e.lease != nil && e.lease.Err() == nil {
		e.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrCampaigning, e.path())
	}
	stale := e.lease
	e.lease = nil
	e.campaigning = true
	e.mu.Unlock()
	if stale != nil {
		_ = e.q.Release(ctx, stale) // lost: gone, or deleted now (or in the background)
	}
	return nil
}

// Resign gives up leadership: our node is deleted and the lease's Lost
// closes (a Run in progress sees its function's ctx cancelled). The next
// participant in line takes over. lock.ErrNotHeld when this handle does not
// lead; lock.ErrReleasePending when the deletion could not be confirmed (see
// there: the handle no longer leads). Any other error (the server refused
// the delete) leaves us leading: call Resign again.
func (e *Election) Resign(ctx context.Context) error {
	return e.resign(ctx, nil)
}

// resign releases the recorded lease if it is want (any lease when want is
// nil). With want set and no longer recorded (someone called Resign), it
// returns nil.
func (e *Election) resign(ctx context.Context, want *conn.Lease) error {
	e.mu.Lock()
	l := e.lease
	switch {
	case want != nil && l != want:
		e.mu.Unlock()
		return nil
	case l == nil || e.campaigning || e.resigning != nil:
		e.mu.Unlock()
		return fmt.Errorf("leader: resign %s: %w", e.path(), lock.ErrNotHeld)
	}
	done := make(chan struct{})
	e.lease, e.resigning = nil, done
	e.mu.Unlock()

	err := e.q.Release(ctx, l)
	e.mu.Lock()
	e.resigning = nil
	close(done)
	if err != nil && !errors.Is(err, queue.ErrReleasePending) {
		e.lease = l // the node is still ours
	}
	e.mu.Unlock()
	if err != nil {
		// err already matches lock.ErrReleasePending when the deletion is
		// pending: say it once.
		return fmt.Errorf("leader: resign %s: %w", e.path(), err)
	}
	return nil
}

// Leading returns our leadership's lease while this handle leads, or nil.
// It never returns a lost lease (one whose Lost is closed: the epoch ended,
// the node was deleted, Resign): leadership lost as far as this process
// knows is no leadership. The lease may still be lost the moment after;
// watch its Lost, and fence writes with it.
func (e *Election) Leading() *conn.Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lease == nil || e.lease.Err() != nil {
		return nil
	}
	return e.lease
}

// Leader returns the current leader: the participant with the lowest
// sequence number, ours or a foreign client's. ErrNoLeader when there is
// none. It is a snapshot: the leader may have changed by the time it
// returns.
func (e *Election) Leader(ctx context.Context) (lock.Participant, error) {
	ep, err := connlink.Of(e.sess).Epoch(ctx)
	if err != nil {
		return lock.Participant{}, fmt.Errorf("leader: leader of %s: %w", e.path(), err)
	}
	ps, err := e.list(ctx, ep, 1)
	if err != nil {
		return lock.Participant{}, fmt.Errorf("leader: leader of %s: %w", e.path(), err)
	}
	if len(ps) == 0 {
		return lock.Participant{}, fmt.Errorf("%w: %s", ErrNoLeader, e.path())
	}
	return ps[0], nil
}

// Participants lists the participants in order: the first leads, the
// others follow in the order they will take over. It is a snapshot; nodes
// that leave while it is taken are left out. Empty when nobody campaigns.
func (e *Election) Participants(ctx context.Context) ([]lock.Participant, error) {
	ep, err := connlink.Of(e.sess).Epoch(ctx)
	if err != nil {
		return nil, fmt.Errorf("leader: participants of %s: %w", e.path(), err)
	}
	ps, err := e.list(ctx, ep, -1)
	if err != nil {
		return nil, fmt.Errorf("leader: participants of %s: %w", e.path(), err)
	}
	return ps, nil
}

// list reads up to n participants (all when n < 0).
func (e *Election) list(ctx context.Context, ep *conn.Epoch, n int) ([]lock.Participant, error) {
	names, _, err := connlink.Of(ep).Children(ctx, e.path())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e.read(ctx, ep, names, n)
}

// read reads the data of up to n contenders among names, in queue order.
func (e *Election) read(ctx context.Context, ep *conn.Epoch, names []string, n int) ([]lock.Participant, error) {
	var out []lock.Participant
	for _, c := range queue.Parse(schema, names) {
		if n >= 0 && len(out) >= n {
			break
		}
		p := zkpath.Join(e.path(), c.Name)
		b, _, err := connlink.Of(ep).Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, lock.Participant{ID: string(b), Node: p, Seq: c.Seq, Holding: len(out) == 0})
	}
	return out, nil
}
