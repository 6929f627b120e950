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

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const (
	stock   = 100                  // items on sale
	workers = 8                    // order-service workers, one session each
	work    = 2 * time.Millisecond // between reading the stock and writing it back
	// The server expires the session of worker victim while it holds the
	// lock for its victimSale-th sale.
	victim, victimSale = 3, 5
	sessionTimeout     = 4 * time.Second
)

// run holds the sale twice, without and with the lock, and checks the
// locked one sold exactly the stock.
func run(ctx context.Context, servers []string, out io.Writer) (err error) {
	root := fmt.Sprintf("/zkrecipes-examples/seckill-%x", time.Now().UnixNano())
	sessions := make([]*conn.Session, workers)
	for i := range sessions {
		if sessions[i], err = conn.Connect(ctx, servers, conn.WithSessionTimeout(sessionTimeout)); err != nil {
			return err
		}
		defer sessions[i].Close()
	}
	admin := sessions[0]
	fmt.Fprintf(out, "Flash sale: %d items, %d workers on separate sessions. A sale reads the stock,\n", stock, workers)
	fmt.Fprintf(out, "works on the order for %v, then writes stock-1 and an order node in one transaction.\n\n", work)

	// 1. No lock.
	free := shop{name: "without a lock", stock: root + "/free/stock", orders: root + "/free/orders"}
	if err := free.open(ctx, admin); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, free.close(admin)) }()
	fmt.Fprintf(out, "1. %s:\n", free.name)
	began := time.Now()
	if _, err := sellConcurrently(sessions, func(i int, s *conn.Session) (string, error) {
		return "", sellUnlocked(ctx, s, free, workerName(i))
	}); err != nil {
		return err
	}
	a, err := free.audit(ctx, admin)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   %s\n", a.summary(time.Since(began)))
	if a.sold > stock {
		fmt.Fprintf(out, "   OVERSOLD by %d: %d items were sold more than once (workers that read the same stock sold the same item)\n",
			a.sold-stock, len(a.twice()))
	} else {
		fmt.Fprintln(out, "   (no oversell this time: the race depends on timing; run it again)")
	}

	// 2. The mutex and guarded writes; one holder loses its session.
	locked := shop{name: "with the mutex and guarded writes", stock: root + "/locked/stock", orders: root + "/locked/orders"}
	lockPath := root + "/locked/lock"
	if err := locked.open(ctx, admin); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, locked.close(admin)) }()
	fmt.Fprintf(out, "\n2. %s; the server expires %s's session while it holds the lock:\n", locked.name, workerName(victim-1))
	began = time.Now()
	notes, err := sellConcurrently(sessions, func(i int, s *conn.Session) (string, error) {
		var chaos func(*conn.Lease) error
		if i == victim-1 {
			chaos = func(l *conn.Lease) error { return expire(ctx, servers[0], l) }
		}
		return sellLocked(ctx, s, locked, lockPath, workerName(i), chaos)
	})
	if err != nil {
		return err
	}
	for _, n := range notes {
		if n != "" {
			fmt.Fprintf(out, "   %s\n", n)
		}
	}
	a, err = locked.audit(ctx, admin)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   %s\n", a.summary(time.Since(began)))
	fmt.Fprintf(out, "   orders per worker: %s\n", a.perWorker())
	switch {
	case a.sold > stock:
		return fmt.Errorf("the locked sale oversold: %d orders for %d items", a.sold, stock)
	case a.sold < stock || a.left != 0:
		return fmt.Errorf("the locked sale undersold: %d orders, %d items left of %d", a.sold, a.left, stock)
	case len(a.twice()) > 0:
		return fmt.Errorf("the locked sale sold items more than once: %v", a.twice())
	}
	fmt.Fprintln(out, "   exactly the stock: every item sold once, none lost")
	return nil
}

func workerName(i int) string { return "w" + strconv.Itoa(i+1) }

// sellConcurrently runs sell for every session at once and returns what
// each one noted, in worker order.
func sellConcurrently(sessions []*conn.Session, sell func(i int, s *conn.Session) (string, error)) ([]string, error) {
	notes := make([]string, len(sessions))
	errs := make([]error, len(sessions))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			notes[i], errs[i] = sell(i, s)
		}()
	}
	close(start)
	wg.Wait()
	return notes, errors.Join(errs...)
}

// sellUnlocked sells until the stock is gone, with nothing to keep two
// workers from reading the same stock.
func sellUnlocked(ctx context.Context, s *conn.Session, sh shop, name string) error {
	for n := 1; ; n++ {
		ep, err := s.Epoch(ctx)
		if err != nil {
			return err
		}
		left, err := sh.left(ctx, ep)
		if err != nil || left <= 0 {
			return err
		}
		time.Sleep(work)
		if _, err := ep.Multi(ctx, sh.sale(left, name, n)...); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// sellLocked sells until the stock is gone, each sale under the mutex and
// written only through the lease. chaos, if set, runs once while the lock
// is held for the victimSale-th sale, before the write. It returns a note
// on any sale that was refused.
func sellLocked(ctx context.Context, s *conn.Session, sh shop, lockPath, name string, chaos func(*conn.Lease) error) (string, error) {
	m, err := mutex.New(s, lockPath)
	if err != nil {
		return "", err
	}
	var notes []string
	for n := 1; ; n++ {
		var c func(*conn.Lease) error
		if n == victimSale {
			c = chaos
		}
		soldOut, note, err := sellOne(ctx, m, sh, name, n, c)
		if note != "" {
			notes = append(notes, note)
		}
		if err != nil || soldOut {
			return strings.Join(notes, "\n   "), err
		}
	}
}

// sellOne makes sale n of worker name under the lock.
func sellOne(ctx context.Context, m *mutex.InterProcessMutex, sh shop, name string, n int, chaos func(*conn.Lease) error) (soldOut bool, note string, err error) {
	lease, err := m.Acquire(ctx)
	if err != nil {
		return false, "", fmt.Errorf("%s: %w", name, err)
	}
	defer func() {
		// A lost lease releases without error.
		if rerr := m.Release(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", name, rerr))
		}
	}()
	left, err := sh.left(ctx, lease.Epoch())
	switch {
	case err != nil && lease.Err() != nil:
		return false, "", nil // the session ended: try again in the next one
	case err != nil || left <= 0:
		return left <= 0, "", err
	}
	time.Sleep(work)
	if chaos != nil {
		if err := chaos(lease); err != nil {
			return false, "", err
		}
	}
	_, err = lease.GuardedWrite(ctx, sh.sale(left, name, n)...)
	switch {
	case errors.Is(err, conn.ErrLeaseLost):
		return false, fmt.Sprintf("%s: lost the lock while selling item %d; its guarded write was refused:\n     %v\n   %s carries on in a new session", name, left, err, name), nil
	case errors.Is(err, conn.ErrConnectionLoss):
		// The write may or may not have committed; the stock node says
		// which, and the next sale reads it under the lock.
		return false, fmt.Sprintf("%s: connection lost while selling item %d; the next sale reads the stock again", name, left), nil
	case err != nil:
		return false, "", fmt.Errorf("%s: %w", name, err)
	}
	return false, "", nil
}

// expire has the server expire l's session, as after a partition or a
// long pause, and waits until the holder has learned it (Lost).
func expire(ctx context.Context, server string, l *conn.Lease) error {
	ep := l.Epoch()
	if err := zktest.ExpireEpoch(ctx, server, ep); err != nil {
		return err
	}
	select {
	case <-l.Lost():
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("the lease was not reported lost 30s after its session expired")
	}
}

// shop is the stock node and the orders under one path.
type shop struct {
	name          string
	stock, orders string // node paths
}

// open creates the stock node holding stock and the empty orders node.
func (sh shop) open(ctx context.Context, s *conn.Session) error {
	ep, err := s.Epoch(ctx)
	if err != nil {
		return err
	}
	if err := ep.CreateParents(ctx, sh.stock); err != nil {
		return err
	}
	_, err = ep.Multi(ctx,
		&zk.CreateRequest{Path: sh.stock, Data: []byte(strconv.Itoa(stock)), Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: sh.orders, Acl: zk.WorldACL(zk.PermAll)})
	return err
}

// close deletes the orders and the stock node.
func (sh shop) close(s *conn.Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := s.Epoch(ctx)
	if err != nil {
		return err
	}
	names, _, err := ep.Children(ctx, sh.orders)
	if err != nil {
		return err
	}
	ops := make([]any, 0, len(names)+2)
	for _, n := range names {
		ops = append(ops, &zk.DeleteRequest{Path: sh.orders + "/" + n, Version: -1})
	}
	ops = append(ops, &zk.DeleteRequest{Path: sh.orders, Version: -1}, &zk.DeleteRequest{Path: sh.stock, Version: -1})
	_, err = ep.Multi(ctx, ops...)
	return err
}

// left reads the stock.
func (sh shop) left(ctx context.Context, ep *conn.Epoch) (int, error) {
	data, _, err := ep.Get(ctx, sh.stock)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(data))
}

// sale is the transaction that sells item left (the stock as read) as
// worker's n-th attempt: the stock goes down by one and an order records
// the item.
func (sh shop) sale(left int, worker string, n int) []any {
	return []any{
		&zk.SetDataRequest{Path: sh.stock, Data: []byte(strconv.Itoa(left - 1)), Version: -1},
		&zk.CreateRequest{Path: fmt.Sprintf("%s/%s-%03d", sh.orders, worker, n), Data: []byte(strconv.Itoa(left)), Acl: zk.WorldACL(zk.PermAll)},
	}
}

// audit is what the books say after a sale.
type audit struct {
	sold   int            // orders
	left   int            // the stock node
	items  map[int]int    // item → times sold
	byWork map[string]int // worker → orders
}

func (sh shop) audit(ctx context.Context, s *conn.Session) (audit, error) {
	a := audit{items: map[int]int{}, byWork: map[string]int{}}
	ep, err := s.Epoch(ctx)
	if err != nil {
		return a, err
	}
	if a.left, err = sh.left(ctx, ep); err != nil {
		return a, err
	}
	names, _, err := ep.Children(ctx, sh.orders)
	if err != nil {
		return a, err
	}
	for _, n := range names {
		data, _, err := ep.Get(ctx, sh.orders+"/"+n)
		if err != nil {
			return a, err
		}
		item, err := strconv.Atoi(string(data))
		if err != nil {
			return a, fmt.Errorf("order %s: %w", n, err)
		}
		a.sold++
		a.items[item]++
		a.byWork[strings.SplitN(n, "-", 2)[0]]++
	}
	return a, nil
}

// summary says how many orders were taken, in how long, and what stock is
// left.
func (a audit) summary(took time.Duration) string {
	return fmt.Sprintf("%d orders for %d items in %v; the stock node says %d left", a.sold, stock, took.Round(10*time.Millisecond), a.left)
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

func (a audit) perWorker() string {
	parts := make([]string, workers)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s %d", workerName(i), a.byWork[workerName(i)])
	}
	return strings.Join(parts, ", ")
}
