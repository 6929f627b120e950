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
	// sale; in the third and fourth runs, worker victim2 freezes too, at
	// its first sale after that, so that the writes that follow each
	// freeze come in the other order.
	victim, victim2, victimSale = 3, 4, 2
	sessionTimeout              = 4 * time.Second
)

// rule is how a sale uses the lease's fencing token.
type rule int

const (
	unfenced  rule = iota
	claimed        // the token claims the row as the sale reads it, and conditions the write
	checkOnly      // the token conditions the write alone
)

// order is what the next holder does while the victim is frozen.
type order int

const (
	noFreeze       order = iota
	nextWrites           // the next holder sells the item the victim read
	nextReadsFirst       // the next holder reads it, then waits for the victim's write
)

// run holds the four sales against the database dsn names (see openStore)
// and checks what each must show: an oversell without a lock, an item sold
// twice with the lock alone, exactly the stock with the lock and its
// fencing token claimed on the row, and a lost update again with the token
// checked on the write alone.
func run(ctx context.Context, servers []string, out io.Writer, dsn string) (err error) {
	st, err := openStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	// A victim's ZooKeeper traffic goes through a proxy: a frozen
	// process sends and reads nothing, so the proxy drops everything
	// (Blackhole) while the victim is frozen, and the server expires its
	// session.
	ws := make([]*worker, workers)
	for i := range ws {
		w := &worker{name: "w" + strconv.Itoa(i+1)}
		addrs := servers
		if i+1 == victim || i+1 == victim2 {
			if w.proxy, err = zktest.StartProxy(servers); err != nil {
				return err
			}
			defer w.proxy.Close()
			addrs = w.proxy.Addrs()
		}
		if w.sess, err = conn.Connect(ctx, addrs, conn.WithSessionTimeout(sessionTimeout)); err != nil {
			return err
		}
		defer w.sess.Close()
		ws[i] = w
	}
	v1, v2 := ws[victim-1].name, ws[victim2-1].name
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
	locked := sale{st: st, shop: "locked-" + id, lock: root + "/locked", plans: []plan{{v1, nextWrites}}}
	fmt.Fprintf(out, "\n2. With the mutex, not fenced; %s freezes while it holds the lock:\n", v1)
	a, err = locked.run(ctx, ws, func(w *worker) error { return locked.sellLocked(ctx, w, out) })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   %s\n", a.summary())
	if a.sold <= stock || len(a.twice()) == 0 {
		return fmt.Errorf("with the lock alone: %d orders for %d items, none sold twice; want the frozen holder's write to sell an item twice", a.sold, stock)
	}
	fmt.Fprintf(out, "   OVERSOLD by %d, even with a lock: %s sold twice\n", a.sold-stock, items(a.twice()))

	// 3. The lock and its fencing token, claimed on the row before the
	// read; two freezes, one for each order.
	twoOrders := []plan{{v1, nextWrites}, {v2, nextReadsFirst}}
	fenced := sale{st: st, shop: "fenced-" + id, lock: root + "/fenced", rule: claimed, plans: twoOrders}
	fmt.Fprintf(out, "\n3. With the mutex, each sale claiming the row with Lease.Fence as it reads, and writing\n")
	fmt.Fprintf(out, "   under the same condition; %s freezes, then %s:\n", v1, v2)
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
	case fenced.refused != 2:
		return fmt.Errorf("fenced: %d of the frozen holder's 2 writes refused; want both", fenced.refused)
	}
	fmt.Fprintln(out, "   exactly the stock: every item sold once; the frozen holders' writes refused in both orders")

	// 4. The token checked on the write alone, as tutorials teach it.
	checked := sale{st: st, shop: "checked-" + id, lock: root + "/checked", rule: checkOnly, plans: twoOrders}
	fmt.Fprintf(out, "\n4. The same, but the token checked on the write alone (read the stock, work, then\n")
	fmt.Fprintf(out, "   UPDATE ... WHERE the row has seen no newer token); %s freezes, then %s:\n", v1, v2)
	a, err = checked.run(ctx, ws, func(w *worker) error { return checked.sellLocked(ctx, w, out) })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   %s\n", a.summary())
	if checked.refused != 1 || checked.accepted != 1 || len(a.twice()) != 1 || a.sold != stock+1 {
		return fmt.Errorf("checked on the write: %d of the frozen holder's writes refused, %d accepted, %d orders, %v sold twice; want one refused, one accepted and a lost update",
			checked.refused, checked.accepted, a.sold, a.twice())
	}
	fmt.Fprintf(out, "   LOST UPDATE: %s sold twice, the stock counted once: a check on the write alone refuses\n", items(a.twice()))
	fmt.Fprintln(out, "   a stale holder only if the next one has already written")
	return nil
}

// worker is an order service and its ZooKeeper session.
type worker struct {
	name  string
	sess  *conn.Session
	proxy *zktest.Proxy // its link to ZooKeeper, for a victim; else nil
}

// plan is a freeze: the victim, and what the next holder does meanwhile.
type plan struct {
	victim string
	order  order
}

// sale is one of the four runs: its row in the store and, when locked,
// its lock.
type sale struct {
	st    *store
	shop  string
	lock  string // the lock's path; "" for none
	rule  rule   // how the sale uses the fencing token
	plans []plan // the freezes, one after the other

	mu       sync.Mutex // guards the fields below
	frozen   int        // plans begun; the last one is over when !freezing
	freezing bool
	waiter   *waiter // armed by the frozen victim (nextReadsFirst) for the next holder
	refused  int     // victims' writes the store refused
	accepted int     // victims' writes the store took
}

// waiter makes the next holder wait, after its read, for the frozen
// victim's write: the victim arms it, the next holder to read takes it.
type waiter struct {
	taken   bool          // guarded by sale.mu
	read    chan readBy   // the next holder, once it has read; buffered
	written chan struct{} // closed once the victim has written
}

// readBy is the next holder, and its token.
type readBy struct {
	name  string
	token conn.Fence
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
		soldOut, err := s.sellOne(ctx, m, w, n, out)
		if err != nil || soldOut {
			return err
		}
	}
}

// sellOne makes w's n-th sale under the lock; if a plan says so, w freezes
// between its read and its write while the next holder does what the plan
// says.
func (s *sale) sellOne(ctx context.Context, m *mutex.InterProcessMutex, w *worker, n int, out io.Writer) (soldOut bool, err error) {
	lease, err := m.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		// A lost lease releases without error.
		err = errors.Join(err, m.Release(context.WithoutCancel(ctx)))
	}()
	var token conn.Fence
	if s.rule != unfenced {
		if token, err = lease.Fence(ctx); err != nil {
			if lease.Err() != nil {
				return false, nil // the session ended: try again in the next one
			}
			return false, err
		}
	}
	var left int
	var refused *fencedError
	if s.rule == claimed {
		left, err = s.st.claim(ctx, s.shop, token)
		if errors.As(err, &refused) {
			return false, nil // a newer grant has claimed the row: this one is stale
		}
	} else {
		left, err = s.st.left(ctx, s.shop)
	}
	if err != nil || left <= 0 {
		return left <= 0, err
	}
	wt := s.takeWaiter()
	if wt != nil {
		wt.read <- readBy{w.name, token}
		select {
		case <-wt.written:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	time.Sleep(work)
	freeze := s.freezeNow(w, n)
	if freeze != noFreeze {
		defer s.thawed()
		armed, err := s.freeze(ctx, w, freeze, left, token, out)
		if err != nil {
			return false, err
		}
		if armed != nil {
			defer close(armed.written) // after the write and its line: the next holder writes
		}
		defer w.proxy.Heal() // it wakes: its client reconnects and learns its session is gone
	}
	if s.rule != unfenced {
		err = s.st.sellFenced(ctx, s.shop, left, w.name, token)
	} else {
		err = s.st.sell(ctx, s.shop, left, w.name)
	}
	first := ""
	if freeze == nextReadsFirst {
		first = " first"
	}
	switch {
	case errors.As(err, &refused) && freeze != noFreeze:
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		fmt.Fprintf(out, "   %s wakes and writes item %d%s: %v\n", w.name, left, first, err)
	case err != nil:
		return false, err
	case freeze != noFreeze:
		s.mu.Lock()
		s.accepted++
		s.mu.Unlock()
		with := ""
		if s.rule != unfenced {
			with = fmt.Sprintf(" (the row has seen no token newer than %v)", token)
		}
		fmt.Fprintf(out, "   %s wakes and writes item %d%s: accepted%s\n", w.name, left, first, with)
	case wt != nil:
		fmt.Fprintf(out, "   %s writes item %d: accepted\n", w.name, left)
	}
	return false, nil
}

// freezeNow says whether w freezes in its n-th sale, and how: when the
// next plan names it, the one before is over, and n is victimSale or
// later.
func (s *sale) freezeNow(w *worker, n int) order {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freezing || s.frozen == len(s.plans) || s.plans[s.frozen].victim != w.name || n < victimSale {
		return noFreeze
	}
	s.freezing = true
	s.frozen++
	return s.plans[s.frozen-1].order
}

// thawed ends the freeze under way.
func (s *sale) thawed() {
	s.mu.Lock()
	s.freezing = false
	s.mu.Unlock()
}

// takeWaiter returns the waiter a frozen victim armed, to the first holder
// after it that reads; nil for anyone else.
func (s *sale) takeWaiter() *waiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiter == nil || s.waiter.taken {
		return nil
	}
	s.waiter.taken = true
	return s.waiter
}

// freeze stands for a process stopped while it holds the lock (a GC pause,
// a frozen VM, a slow disk): nothing reaches ZooKeeper from it or comes
// back, so the server expires its session and grants the lock to the next
// worker. It returns once that worker has sold item left, the item the
// frozen one read (nextWrites), or has read it and waits for the frozen
// one's write (nextReadsFirst: the returned waiter, whose written the
// caller closes once it has written).
func (s *sale) freeze(ctx context.Context, w *worker, o order, left int, token conn.Fence, out io.Writer) (*waiter, error) {
	with, reads := "", "reads"
	switch s.rule {
	case claimed:
		with, reads = fmt.Sprintf(" with fencing token %v", token), "claims the row, reads"
	case checkOnly:
		with = fmt.Sprintf(" with fencing token %v", token)
	}
	var wt *waiter
	if o == nextReadsFirst {
		wt = &waiter{read: make(chan readBy, 1), written: make(chan struct{})}
		s.mu.Lock()
		s.waiter = wt
		s.mu.Unlock()
	}
	fmt.Fprintf(out, "   %s holds the lock%s, %s item %d and freezes\n", w.name, with, reads, left)
	frozen := time.Now()
	w.proxy.Blackhole()
	var next readBy
	var err error
	if wt != nil {
		select {
		case next = <-wt.read:
		case <-time.After(time.Minute):
			err = errors.New("timed out")
		case <-ctx.Done():
			err = ctx.Err()
		}
	} else {
		err = demo.WaitFor(ctx, time.Minute, func() bool {
			next.name, next.token, _ = s.st.buyer(ctx, s.shop, left)
			return next.name != ""
		})
	}
	if err != nil {
		w.proxy.Heal()
		if wt != nil {
			close(wt.written)
		}
		return nil, fmt.Errorf("nobody took item %d while %s was frozen: %w", left, w.name, err)
	}
	with, did, then := "", " and sells", ""
	if s.rule != unfenced {
		with = fmt.Sprintf(" (token %v)", next.token)
	}
	if s.rule == claimed {
		did = ", claims the row and sells"
	}
	if wt != nil {
		did, then = strings.Replace(did, "sells", "reads", 1), ", then waits"
	}
	fmt.Fprintf(out, "   its session expires (timeout %v); %s gets the lock%s%s item %d%s; %s was frozen %v\n",
		sessionTimeout, next.name, with, did, left, then, w.name, time.Since(frozen).Round(100*time.Millisecond))
	return wt, nil
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
