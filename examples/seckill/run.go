package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const (
	stock   = 100                  // items on sale
	workers = 8                    // order-service workers, one session each
	work    = 2 * time.Millisecond // between reading the stock and writing it back
	// Worker victim freezes while it holds the lock for its victimSale-th
	// sale, in the second and third runs.
	victim, victimSale = 3, 2
	sessionTimeout     = 4 * time.Second
)

// run holds the three sales against the database dsn names (see
// openStore) and checks what each must show: an oversell without a lock,
// an item sold twice with the lock alone, exactly the stock with the lock
// and its fencing token checked by the store.
func run(ctx context.Context, servers []string, out io.Writer, dsn string) (err error) {
	st, err := openStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	// The victim's ZooKeeper traffic goes through a proxy: a frozen
	// process sends and reads nothing, so the proxy drops everything
	// (Blackhole) while the victim is frozen, and the server expires its
	// session.
	proxy, err := zktest.StartProxy(servers)
	if err != nil {
		return err
	}
	defer proxy.Close()
	ws := make([]*worker, workers)
	for i := range ws {
		addrs := servers
		if i == victim-1 {
			addrs = proxy.Addrs()
		}
		s, err := conn.Connect(ctx, addrs, conn.WithSessionTimeout(sessionTimeout))
		if err != nil {
			return err
		}
		defer s.Close()
		ws[i] = &worker{name: "w" + strconv.Itoa(i+1), sess: s}
	}
	id := fmt.Sprintf("%x", time.Now().UnixNano())
	root := "/zkrecipes-examples/seckill-" + id

	fmt.Fprintf(out, "Flash sale: %d items in %s, %d workers, each on its own ZooKeeper session.\n", stock, st.name, workers)
	fmt.Fprintf(out, "A sale reads the stock, works on the order for %v, then writes stock-1 and the order\n", work)
	fmt.Fprintf(out, "in a transaction (%s: %s's default isolation level).\n", st.isolation, st.kind)

	// 1. No lock.
	free := sale{st: st, shop: "free-" + id}
	fmt.Fprintf(out, "\n1. Without a lock:\n")
	a, err := free.run(ctx, ws, func(w *worker) error { return free.sellUnlocked(ctx, w) })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   %s\n", a.summary())
	if a.sold <= stock {
		return fmt.Errorf("without a lock: %d orders for %d items; the race did not show this time: run it again", a.sold, stock)
	}
	fmt.Fprintf(out, "   OVERSOLD by %d: %d items sold more than once (workers that read the same stock sold the same item)\n",
		a.sold-stock, len(a.twice()))

	// 2. The lock alone; the victim freezes holding it.
	locked := sale{st: st, shop: "locked-" + id, lock: root + "/locked", proxy: proxy}
	fmt.Fprintf(out, "\n2. With the mutex, not fenced; %s freezes while it holds the lock:\n", ws[victim-1].name)
	a, err = locked.run(ctx, ws, func(w *worker) error { return locked.sellLocked(ctx, w, out) })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   %s\n", a.summary())
	if a.sold <= stock || len(a.twice()) == 0 {
		return fmt.Errorf("with the lock alone: %d orders for %d items, none sold twice; want the frozen holder's write to sell an item twice", a.sold, stock)
	}
	fmt.Fprintf(out, "   OVERSOLD by %d, even with a lock: %s sold twice\n", a.sold-stock, items(a.twice()))

	// 3. The lock and its fencing token, checked by the store.
	fenced := sale{st: st, shop: "fenced-" + id, lock: root + "/fenced", proxy: proxy, fenced: true}
	fmt.Fprintf(out, "\n3. With the mutex, each write carrying Lease.Fence, checked by the row; %s freezes again:\n", ws[victim-1].name)
	a, err = fenced.run(ctx, ws, func(w *worker) error { return fenced.sellLocked(ctx, w, out) })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   %s\n", a.summary())
	switch {
	case a.sold != stock || a.left != 0:
		return fmt.Errorf("fenced: %d orders, %d items left of %d; want exactly the stock sold", a.sold, a.left, stock)
	case len(a.twice()) > 0:
		return fmt.Errorf("fenced: items sold more than once: %v", a.twice())
	case !fenced.refused:
		return errors.New("fenced: the frozen holder's write was not refused")
	}
	fmt.Fprintln(out, "   exactly the stock: every item sold once")
	return nil
}

// worker is an order service and its ZooKeeper session.
type worker struct {
	name string
	sess *conn.Session
}

// sale is one of the three runs: its row in the store and, when locked,
// its lock.
type sale struct {
	st      *store
	shop    string
	lock    string        // the lock's path; "" for none
	proxy   *zktest.Proxy // the victim's link to ZooKeeper
	fenced  bool          // writes carry the lease's fencing token
	refused bool          // the store refused the victim's write (set by the victim's goroutine, read after run)
}

// run opens the sale, runs sell for every worker at once and returns the
// books, measured; it removes the sale's rows at the end.
func (s *sale) run(ctx context.Context, ws []*worker, sell func(*worker) error) (_ audit, err error) {
	if err := s.st.open(ctx, s.shop, stock); err != nil {
		return audit{}, err
	}
	defer func() { err = errors.Join(err, s.st.remove(context.WithoutCancel(ctx), s.shop)) }()
	began := time.Now()
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = sell(w); errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", w.name, errs[i])
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	if err := errors.Join(errs...); err != nil {
		return audit{}, err
	}
	a, err := s.st.audit(ctx, s.shop)
	a.took = took
	return a, err
}

// sellUnlocked sells until the stock is gone, with nothing to keep two
// workers from reading the same stock.
func (s *sale) sellUnlocked(ctx context.Context, w *worker) error {
	for {
		left, err := s.st.left(ctx, s.shop)
		if err != nil || left <= 0 {
			return err
		}
		time.Sleep(work)
		if err := s.st.sell(ctx, s.shop, left, w.name); err != nil {
			return err
		}
	}
}

// sellLocked sells until the stock is gone, each sale under the mutex.
func (s *sale) sellLocked(ctx context.Context, w *worker, out io.Writer) error {
	m, err := mutex.New(w.sess, s.lock)
	if err != nil {
		return err
	}
	for n := 1; ; n++ {
		freeze := w.name == "w"+strconv.Itoa(victim) && n == victimSale
		soldOut, err := s.sellOne(ctx, m, w, freeze, out)
		if err != nil || soldOut {
			return err
		}
	}
}

// sellOne makes one sale under the lock; with freeze, the worker freezes
// between its read and its write until another worker has sold.
func (s *sale) sellOne(ctx context.Context, m *mutex.InterProcessMutex, w *worker, freeze bool, out io.Writer) (soldOut bool, err error) {
	lease, err := m.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		// A lost lease releases without error.
		err = errors.Join(err, m.Release(context.WithoutCancel(ctx)))
	}()
	var token conn.Fence
	if s.fenced {
		if token, err = lease.Fence(ctx); err != nil {
			if lease.Err() != nil {
				return false, nil // the session ended: try again in the next one
			}
			return false, err
		}
	}
	left, err := s.st.left(ctx, s.shop)
	if err != nil || left <= 0 {
		return left <= 0, err
	}
	time.Sleep(work)
	if freeze {
		if err := s.freeze(ctx, w, left, token, out); err != nil {
			return false, err
		}
		defer s.proxy.Heal() // it wakes: its client reconnects and learns its session is gone
	}
	if s.fenced {
		err = s.st.sellFenced(ctx, s.shop, left, w.name, token)
	} else {
		err = s.st.sell(ctx, s.shop, left, w.name)
	}
	var refused *fencedError
	switch {
	case errors.As(err, &refused) && freeze:
		s.refused = true
		fmt.Fprintf(out, "   %s wakes and writes item %d: %v\n", w.name, left, err)
		return false, nil
	case err != nil:
		return false, err
	case freeze:
		fmt.Fprintf(out, "   %s wakes and writes item %d: accepted\n", w.name, left)
	}
	return false, nil
}

// freeze stands for a process stopped while it holds the lock (a GC pause,
// a frozen VM, a slow disk): nothing reaches ZooKeeper from it or comes
// back, so the server expires its session and grants the lock to the next
// worker. It returns once that worker has sold item left, the item the
// frozen one read.
func (s *sale) freeze(ctx context.Context, w *worker, left int, token conn.Fence, out io.Writer) error {
	with := ""
	if s.fenced {
		with = fmt.Sprintf(" with fencing token %v", token)
	}
	fmt.Fprintf(out, "   %s holds the lock%s, reads item %d and freezes\n", w.name, with, left)
	frozen := time.Now()
	s.proxy.Blackhole()
	var next string
	var token2 conn.Fence
	err := demo.WaitFor(ctx, time.Minute, func() bool {
		next, token2, _ = s.st.buyer(ctx, s.shop, left)
		return next != ""
	})
	if err != nil {
		s.proxy.Heal()
		return fmt.Errorf("nobody sold item %d while %s was frozen: %w", left, w.name, err)
	}
	with = ""
	if s.fenced {
		with = fmt.Sprintf(" (token %v)", token2)
	}
	fmt.Fprintf(out, "   its session expires (timeout %v); %s gets the lock%s and sells item %d; %s was frozen %v\n",
		sessionTimeout, next, with, left, w.name, time.Since(frozen).Round(100*time.Millisecond))
	return nil
}

// summary says how many orders were taken, in how long, and what stock is
// left.
func (a audit) summary() string {
	return fmt.Sprintf("%d orders for %d items in %v; the stock column says %d left", a.sold, stock, a.took.Round(10*time.Millisecond), a.left)
}

// twice lists the items sold more than once.
func (a audit) twice() []int {
	var t []int
	for item, n := range a.items {
		if n > 1 {
			t = append(t, item)
		}
	}
	slices.Sort(t)
	return t
}

// items is "item 7" or "items 7, 8".
func items(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	if len(s) == 1 {
		return "item " + s[0]
	}
	return "items " + strings.Join(s, ", ")
}
