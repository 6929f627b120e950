package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const (
	stock   = 60                   // items on sale
	workers = 4                    // order-service workers, one session each
	sellers = 3                    // goroutines per worker, sharing its mutex
	work    = 2 * time.Millisecond // between reading the stock and writing it back
	// The server expires the session of worker victim while it holds the
	// lock for its victimGrant-th grant.
	victim, victimGrant = 2, 3
	sessionTimeout      = 4 * time.Second
	passes              = 8 // WithLocalHandoff: local handoffs per node at most
)

// config is the command's flags, and what a test watches.
type config struct {
	addr   string        // HTTP address of /metrics and /otel
	linger time.Duration // keep serving after the sale
	// observe, when set, is called while the program runs, its sessions
	// open and its endpoints served at url: at "expired", once the
	// victim's lease is found lost (the others sell on), and at "sold",
	// after the sale, with what the sale did (tally). An error ends run.
	observe func(ctx context.Context, stage, url string, t tally) error
}

// tally is what the sale did, counted by the sellers themselves (not
// read from the metrics): what the endpoints must say.
type tally struct {
	acquired int // Acquire calls granted (every call is: none fails)
	handoffs int // grants passed from another seller of the same worker (Fence.Pass > 0)
	holds    int // grants released while held
	lost     int // grants found lost (the victim's, its session expired)
	epochs   int // ZooKeeper sessions: one per worker, and one after the expiry
}

// run holds the sale with the metrics served on cfg.addr, prints what it
// did and what the endpoints serve, and checks it sold exactly the stock.
func run(ctx context.Context, cfg config, servers []string, out io.Writer) (err error) {
	root := fmt.Sprintf("/zkrecipes-examples/metrics-%x", time.Now().UnixNano())
	// The path label: the lock path without the run's root, a fixed set
	// (one per lock), never one series per entity.
	label := func(_, path string) string { return strings.TrimPrefix(path, root) }
	exp, err := export(cfg.addr, label)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, exp.close()) }()
	sessions := make([]*conn.Session, workers)
	for i := range sessions {
		if sessions[i], err = conn.Connect(ctx, servers, conn.WithSessionTimeout(sessionTimeout), conn.WithMetrics(exp.hooks)); err != nil {
			return err
		}
		defer sessions[i].Close()
	}
	fmt.Fprintf(out, "Metrics served at %s/metrics (Prometheus adapter) and %s/otel (OpenTelemetry adapter).\n", exp.url, exp.url)
	fmt.Fprintf(out, "Flash sale: %d items, %d workers on separate sessions, %d sellers each sharing the worker's\n", stock, workers, sellers)
	fmt.Fprintf(out, "mutex with in-process handoff; the server expires w%d's session while it holds the lock.\n\n", victim)

	sh := shop{stock: root + "/stock", orders: root + "/orders", lock: root + "/lock"}
	if err := sh.open(ctx, sessions[0]); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sh.close(sessions[0])) }()
	began := time.Now()
	var (
		t     counts
		notes []string
		mu    sync.Mutex // guards notes
		wg    sync.WaitGroup
		errs  = make([]error, workers*sellers)
	)
	for i, s := range sessions {
		w := &worker{name: "w" + strconv.Itoa(i+1), sess: s, sh: sh, t: &t, victim: i+1 == victim, servers: servers,
			observe: cfg.observe, url: exp.url}
		if w.m, err = mutex.New(s, sh.lock, lock.WithLocalHandoff(passes, 0)); err != nil {
			return err
		}
		w.note = func(n string) {
			mu.Lock()
			notes = append(notes, n)
			mu.Unlock()
		}
		for j := range sellers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i*sellers+j] = w.sell(ctx)
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(out, "%s\n", n)
	}
	sold, left, err := sh.audit(ctx, sessions[0])
	if err != nil {
		return err
	}
	did := t.tally()
	fmt.Fprintf(out, "Sold %d orders for %d items in %v; the stock node says %d left.\n", sold, stock, time.Since(began).Round(10*time.Millisecond), left)
	fmt.Fprintf(out, "What the sale did: %d acquisitions (all granted), %d of them local handoffs, %d holds,\n", did.acquired, did.handoffs, did.holds)
	fmt.Fprintf(out, "%d lease lost (its session expired), %d epochs (%d sessions, and one after the expiry).\n\n", did.lost, did.epochs, workers)
	if sold != stock || left != 0 {
		return fmt.Errorf("the sale sold %d orders with %d items left, for a stock of %d", sold, left, stock)
	}
	if did.lost != 1 {
		return fmt.Errorf("%d leases lost, want 1 (w%d's, its session expired)", did.lost, victim)
	}
	if cfg.observe != nil {
		if err := cfg.observe(ctx, "sold", exp.url, did); err != nil {
			return err
		}
	}
	for _, ep := range []struct{ path, what string }{
		{"/metrics", "the Prometheus adapter"},
		{"/otel", "the OpenTelemetry adapter, through OpenTelemetry's Prometheus exporter"},
	} {
		fmt.Fprintf(out, "GET %s (%s):\nthe lock and session series, histograms by their _count:\n", ep.path, ep.what)
		if err := exp.excerpt(ctx, ep.path, out); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	if cfg.linger > 0 {
		fmt.Fprintf(out, "Serving %s/metrics and %s/otel for %v (-linger).\n", exp.url, exp.url, cfg.linger)
		select {
		case <-time.After(cfg.linger):
		case <-ctx.Done():
		}
	}
	return nil
}

// counts is tally as the sellers add to it.
type counts struct {
	acquired, handoffs, holds, lost, expiries atomic.Int64
}

func (c *counts) tally() tally {
	return tally{acquired: int(c.acquired.Load()), handoffs: int(c.handoffs.Load()), holds: int(c.holds.Load()),
		lost: int(c.lost.Load()), epochs: workers + int(c.expiries.Load())}
}

// worker is one order service: a session and its mutex, shared by its
// sellers.
type worker struct {
	name    string
	sess    *conn.Session
	m       *mutex.InterProcessMutex
	sh      shop
	t       *counts
	note    func(string)
	grants  atomic.Int64 // the worker's grants so far
	victim  bool
	servers []string
	observe func(ctx context.Context, stage, url string, t tally) error
	url     string
	n       atomic.Int64 // order numbers
}

// sell sells until the stock is gone.
func (w *worker) sell(ctx context.Context) error {
	for {
		soldOut, err := w.sellOne(ctx)
		if err != nil || soldOut {
			return err
		}
	}
}

// sellOne makes one sale under the lock: reads the stock, works on the
// order, and writes stock-1 and an order node through the lease
// (GuardedWrite: only while the lock is held).
func (w *worker) sellOne(ctx context.Context) (soldOut bool, err error) {
	lease, err := w.m.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("%s: %w", w.name, err)
	}
	w.t.acquired.Add(1)
	defer func() {
		held := lease.Err() == nil
		if rerr := w.m.Release(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", w.name, rerr))
		} else if held {
			w.t.holds.Add(1)
		}
	}()
	// The grant's fencing token says how it came: pass 0 is a node of
	// its own, granted by ZooKeeper; pass 1, 2, ... a local handoff on it.
	f, err := lease.Fence(ctx)
	if err != nil {
		return false, fmt.Errorf("%s: %w", w.name, err)
	}
	if f.Pass > 0 {
		w.t.handoffs.Add(1)
	}
	left, err := w.sh.left(ctx, w.sess)
	if err != nil || left <= 0 {
		return left <= 0, err
	}
	time.Sleep(work)
	if w.victim && w.grants.Add(1) == victimGrant {
		if err := w.expire(ctx, lease); err != nil {
			return false, err
		}
	}
	_, err = lease.GuardedWrite(ctx, w.sh.sale(left, w.name, int(w.n.Add(1)))...)
	switch {
	case errors.Is(err, conn.ErrLeaseLost):
		w.t.lost.Add(1)
		w.note(fmt.Sprintf("%s lost the lock while selling item %d (the server expired its session); its guarded\n"+
			"write was refused, and it carries on in a new session.", w.name, left))
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%s: %w", w.name, err)
	}
	return false, nil
}

// expire has the server expire the session of lease, as after a partition
// or a long pause, waits until the holder has learned it (Lost), and lets
// observe look at the endpoints while the others sell on.
func (w *worker) expire(ctx context.Context, lease *conn.Lease) error {
	if err := zktest.ExpireEpoch(ctx, w.servers[0], lease.Epoch()); err != nil {
		return err
	}
	w.t.expiries.Add(1)
	select {
	case <-lease.Lost():
	case <-time.After(30 * time.Second):
		return errors.New("the lease was not reported lost 30s after its session expired")
	}
	if w.observe != nil {
		return w.observe(ctx, "expired", w.url, tally{})
	}
	return nil
}

// shop is the stock node, the orders and the lock under one path.
type shop struct {
	stock, orders, lock string // paths
}

// open creates the stock node holding stock and the empty orders node.
func (sh shop) open(ctx context.Context, s *conn.Session) error {
	if err := demo.CreateParents(ctx, s, sh.stock); err != nil {
		return err
	}
	if _, err := s.Create(ctx, sh.stock, []byte(strconv.Itoa(stock)), 0, zk.WorldACL(zk.PermAll)); err != nil {
		return err
	}
	_, err := s.Create(ctx, sh.orders, nil, 0, zk.WorldACL(zk.PermAll))
	return err
}

// close deletes the orders and the stock node (the lock's parent, a
// container, goes by itself once empty).
func (sh shop) close(s *conn.Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, _, err := s.Children(ctx, sh.orders)
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(names)+2)
	for _, n := range names {
		paths = append(paths, sh.orders+"/"+n)
	}
	for _, p := range append(paths, sh.orders, sh.stock) {
		if err := s.Delete(ctx, p, -1); err != nil {
			return err
		}
	}
	return nil
}

// left reads the stock.
func (sh shop) left(ctx context.Context, s *conn.Session) (int, error) {
	data, _, err := s.Get(ctx, sh.stock)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(data))
}

// sale is the transaction that sells item left (the stock as read) as
// worker's n-th order: the stock goes down by one and an order records
// the item.
func (sh shop) sale(left int, worker string, n int) []any {
	return []any{
		&zk.SetDataRequest{Path: sh.stock, Data: []byte(strconv.Itoa(left - 1)), Version: -1},
		&zk.CreateRequest{Path: fmt.Sprintf("%s/%s-%03d", sh.orders, worker, n), Data: []byte(strconv.Itoa(left)), Acl: zk.WorldACL(zk.PermAll)},
	}
}

// audit counts the orders, each item at most once, and reads what is
// left.
func (sh shop) audit(ctx context.Context, s *conn.Session) (sold, left int, err error) {
	if left, err = sh.left(ctx, s); err != nil {
		return 0, 0, err
	}
	names, _, err := s.Children(ctx, sh.orders)
	if err != nil {
		return 0, 0, err
	}
	items := map[string]bool{}
	for _, n := range names {
		data, _, err := s.Get(ctx, sh.orders+"/"+n)
		if err != nil {
			return 0, 0, err
		}
		if items[string(data)] {
			return 0, 0, fmt.Errorf("item %s sold twice", data)
		}
		items[string(data)] = true
	}
	return len(names), left, nil
}
