package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/bg"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/internal/queue"
	"github.com/zkrecipes/zkrecipes/internal/report"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// schema names the nodes as Curator's LeaderLatch: "_c_<uuid>-latch-<seq>".
var schema = locknode.ProtectedSchema{Name: "latch"}

// Errors returned by this package, compared with errors.Is.
var (
	// ErrCampaigning: Campaign or Run on a handle that campaigns or leads.
	ErrCampaigning = errors.New("leader: already campaigning or leading")

	// ErrNoLeader: Leader found no participant under the election path.
	ErrNoLeader = errors.New("leader: no leader")

	// ErrLeadershipLost: Run's term ended because the lease's Lost closed.
	// It also matches conn.ErrLeaseLost and the lease's reason.
	ErrLeadershipLost = errors.New("leader: leadership lost")
)

// Election is one participant in the election at a path: it campaigns,
// leads and resigns at most once at a time. Safe for concurrent use.
type Election struct {
	sess *conn.Session
	q    *queue.Queue
	cfg  lockopt.Config

	mu          sync.Mutex    // guards the fields below
	campaigning bool          // a Campaign is under way
	resigning   chan struct{} // non-nil while a Resign is under way; closed when it ends
	lease       *conn.Lease   // while we lead (possibly lost: see Lost)
}

// New returns participant id's handle on the election at path. id, which
// should be unique, is our node's data (LeaderLatch's id). It takes
// WithRequeue; any other option fails with conn.ErrInvalidArgument.
func New(sess *conn.Session, path, id string, opts ...lock.Option) (*Election, error) {
	cfg, err := lockopt.Configure("leader.New", sess, path, lockopt.Requeue, opts)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, fmt.Errorf("leader: new %s: empty participant id: %w", path, conn.ErrInvalidArgument)
	}
	// No handover mark: it would consume a LeaderLatch waiter's watch.
	q, err := queue.New(sess, path, queue.Config{Schema: schema, Predicate: queue.First, Data: []byte(id)},
		queue.Options{Recipe: "leader"})
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	return &Election{sess: sess, q: q, cfg: cfg}, nil
}

// WithRequeue makes Run campaign again after a term that fn ended with nil
// or that was lost (Curator LeaderSelector's autoRequeue): Run then returns
// only when its ctx ends, fn fails, or the resign after the term fails.
// Only leader.New takes it.
func WithRequeue() lock.Option {
	return lockopt.Give(lockopt.Requeue)
}

// path is the election path.
func (e *Election) path() string { return e.q.Path() }

// Campaign queues our node and blocks until we lead or ctx ends, and
// returns the leadership as a lease; Resign ends it. On error nothing is
// left behind; ErrCampaigning when this handle already campaigns or leads.
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

// lead queues our node until it is first (nil, nil if not and !wait), then
// confirms with Fence that it still exists (the queue grants a node
// deleted while it waited).
func (e *Election) lead(ctx context.Context, wait bool) (l *conn.Lease, err error) {
	done := report.Meter(e.sess, "leader", e.path())
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
				err = bg.CtxErr(ctx)
			}
			return nil, errors.Join(err, rerr)
		}
		connlink.Of(e.sess).Logger().Info("leader: our node was gone when we were to lead; campaigning again",
			zap.String("path", e.path()), zap.Error(err), zap.NamedError("release", rerr))
	}
}

// begin marks a campaign under way, once a Resign has ended, and drops a
// lost leadership still recorded.
func (e *Election) begin(ctx context.Context) error {
	e.mu.Lock()
	for e.resigning != nil {
		done := e.resigning
		e.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("leader: campaign %s: %w", e.path(), bg.CtxErr(ctx))
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

// Resign gives up leadership: our node is deleted and Lost closes.
// lock.ErrNotHeld when this handle does not lead; lock.ErrReleasePending
// when the deletion is unconfirmed; any other error leaves us leading.
func (e *Election) Resign(ctx context.Context) error {
	return e.resign(ctx, nil)
}

// resign releases the recorded lease if it is want (any when want is nil);
// nil if want is no longer recorded (someone called Resign).
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
	if err != nil && !errors.Is(err, lock.ErrReleasePending) {
		e.lease = l // the node is still ours
	}
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("leader: resign %s: %w", e.path(), err)
	}
	return nil
}

// Leader returns the current leader, ours or a foreign client's;
// ErrNoLeader when there is none. A snapshot.
func (e *Election) Leader(ctx context.Context) (lock.Participant, error) {
	ps, err := e.list(ctx, "leader of", 1)
	switch {
	case err != nil:
		return lock.Participant{}, err
	case len(ps) == 0:
		return lock.Participant{}, fmt.Errorf("%w: %s", ErrNoLeader, e.path())
	}
	return ps[0], nil
}

// Participants lists the participants in order, the leader first. A
// snapshot.
func (e *Election) Participants(ctx context.Context) ([]lock.Participant, error) {
	return e.list(ctx, "participants of", -1)
}

// list reads up to n participants (all when n < 0); its errors say op.
func (e *Election) list(ctx context.Context, op string, n int) ([]lock.Participant, error) {
	ep, err := connlink.Of(e.sess).Epoch(ctx)
	var names []string
	if err == nil {
		names, _, err = connlink.Of(ep).Children(ctx, e.path())
	}
	var ps []lock.Participant
	if err == nil {
		ps, err = e.read(ctx, ep, names, n)
	}
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("leader: %s %s: %w", op, e.path(), err)
	}
	return ps, nil
}

// read reads the data of up to n contenders among names, in queue order.
func (e *Election) read(ctx context.Context, ep *conn.Epoch, names []string, n int) ([]lock.Participant, error) {
	var out []lock.Participant
	for _, c := range locknode.Parse(schema, names) {
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

// Run campaigns, then runs fn with the term's lease. fn's ctx is cancelled
// when Run's ctx ends or, with a cause matching ErrLeadershipLost, when the
// lease is lost. When fn returns, Run resigns and returns: the campaign's
// error if we never led; ErrLeadershipLost if the term was lost; else fn's
// error joined with the resign's. WithRequeue campaigns again instead. A
// nil fn fails with conn.ErrInvalidArgument.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context, lease *conn.Lease) error) error {
	if fn == nil {
		return fmt.Errorf("leader: run %s: nil function: %w", e.path(), conn.ErrInvalidArgument)
	}
	for {
		l, err := e.Campaign(ctx)
		if err != nil {
			return err
		}
		err = e.term(ctx, l, fn)
		if !e.cfg.Requeue {
			return err
		}
		if ctx.Err() != nil {
			// The term ended with ctx: Run's answer is ctx's.
			if err == nil || errors.Is(err, ErrLeadershipLost) {
				err = fmt.Errorf("leader: run %s: %w", e.path(), bg.CtxErr(ctx))
			}
			return err
		}
		if err != nil && !errors.Is(err, ErrLeadershipLost) {
			return err
		}
	}
}

// term runs fn under lease l and resigns.
func (e *Election) term(ctx context.Context, l *conn.Lease, fn func(ctx context.Context, lease *conn.Lease) error) error {
	start := time.Now()
	report.Leader(e.sess, metrics.Leader{Path: e.path(), Leading: true})
	defer func() { report.Leader(e.sess, metrics.Leader{Path: e.path(), Duration: time.Since(start)}) }()
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-l.Lost():
			cancel(fmt.Errorf("%w: %w", ErrLeadershipLost, l.Err()))
		case <-stop:
		}
	}()
	ferr := fn(fctx, l)
	close(stop)
	<-done
	lost := l.Err() // before our own resign closes Lost

	rctx, rcancel := bg.CleanupContext(ctx, l.Epoch())
	defer rcancel()
	rerr := e.resign(rctx, l)
	if errors.Is(rerr, lock.ErrReleasePending) {
		connlink.Of(e.sess).Logger().Info("leader: resign after the term is pending")
	}
	switch {
	case lost != nil && ferr != nil && !errors.Is(ferr, context.Canceled):
		return fmt.Errorf("%w: %s: %w (fn: %w)", ErrLeadershipLost, e.path(), lost, ferr)
	case lost != nil:
		return fmt.Errorf("%w: %s: %w", ErrLeadershipLost, e.path(), lost)
	}
	return errors.Join(ferr, rerr)
}
