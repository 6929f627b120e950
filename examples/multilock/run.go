package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const (
	opening        = 100 // each account's opening balance
	transfers      = 20  // per teller
	amountAB       = 5   // each transfer A→B
	amountBA       = 3   // each transfer B→A
	giveUp         = time.Second
	sessionTimeout = 4 * time.Second
)

// bank is two accounts, each a node holding its balance and guarded by a
// mutex of its own.
type bank struct {
	root string
}

func (b bank) account(name string) string { return b.root + "/accounts/" + name }
func (b bank) lock(name string) string    { return b.root + "/locks/" + name }

// mutexes returns s's handles on the locks of the named accounts, in the
// order given.
func (b bank) mutexes(s *conn.Session, names ...string) ([]*mutex.InterProcessMutex, error) {
	ms := make([]*mutex.InterProcessMutex, len(names))
	for i, n := range names {
		var err error
		if ms[i], err = mutex.New(s, b.lock(n)); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// multi returns s's MultiLock over the locks of the named accounts, given
// in the order of names.
func (b bank) multi(s *conn.Session, names ...string) (*multilock.MultiLock, error) {
	ms, err := b.mutexes(s, names...)
	if err != nil {
		return nil, err
	}
	locks := make([]lock.Locker, len(ms))
	for i, m := range ms {
		locks[i] = m
	}
	return multilock.New(locks...)
}

func run(ctx context.Context, servers []string, out io.Writer) (err error) {
	b := bank{root: fmt.Sprintf("/zkrecipes-examples/multilock-%x", time.Now().UnixNano())}
	var tellers [2]*conn.Session
	for i := range tellers {
		if tellers[i], err = conn.Connect(ctx, servers, conn.WithSessionTimeout(sessionTimeout)); err != nil {
			return err
		}
		defer tellers[i].Close()
	}
	auditor, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return err
	}
	defer auditor.Close()
	if err := b.open(ctx, auditor); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.close(auditor)) }()
	fmt.Fprintf(out, "Two accounts, A and B, %d each, each with a mutex of its own.\n", opening)
	fmt.Fprintln(out, "Teller 1 moves money A→B, teller 2 B→A, each on its own session.")

	if err := deadlock(ctx, b, tellers, out); err != nil {
		return err
	}
	if err := transferMany(ctx, b, tellers, auditor, out); err != nil {
		return err
	}
	if err := allOrNothing(ctx, b, tellers[0], auditor, out); err != nil {
		return err
	}
	return lost(ctx, b, servers, tellers, auditor, out)
}

// deadlock takes the locks one at a time, each teller in the order of its
// transfer: both get their first lock and wait for the other's.
func deadlock(ctx context.Context, b bank, tellers [2]*conn.Session, out io.Writer) error {
	fmt.Fprintln(out, "\n1. Locks taken one at a time, in the order of each transfer (A then B, B then A):")
	orders := [2][2]string{{"A", "B"}, {"B", "A"}}
	var (
		firstHeld, secondTried sync.WaitGroup // barriers
		done                   sync.WaitGroup
		errs                   [2]error // of the second acquire
		setup                  [2]error
	)
	firstHeld.Add(2)
	secondTried.Add(2)
	for t := range tellers {
		done.Add(1)
		go func() {
			defer done.Done()
			// Mutex handles are reentrant per goroutine: this goroutine
			// makes every call on them.
			ms, err := b.mutexes(tellers[t], orders[t][0], orders[t][1])
			if err == nil {
				_, err = ms[0].Acquire(ctx)
			}
			firstHeld.Done()
			if err != nil {
				setup[t] = err
				secondTried.Done()
				return
			}
			firstHeld.Wait() // both hold their first lock
			wait, cancel := context.WithTimeout(ctx, giveUp)
			_, errs[t] = ms[1].Acquire(wait)
			cancel()
			secondTried.Done()
			if errs[t] == nil {
				setup[t] = ms[1].Release(ctx)
			}
			secondTried.Wait() // give the first lock back only when both have tried
			setup[t] = errors.Join(setup[t], ms[0].Release(ctx))
		}()
	}
	done.Wait()
	if err := errors.Join(setup[:]...); err != nil {
		return err
	}
	fmt.Fprintln(out, "   teller 1 holds A and waits for B; teller 2 holds B and waits for A")
	for t, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("teller %d: expected to wait for its second lock until the deadline, got %v", t+1, err)
		}
	}
	fmt.Fprintf(out, "   deadlock: neither gets its second lock; both give up after %v\n", giveUp)
	return nil
}

// transferMany has both tellers make their transfers at once, each through
// a MultiLock given the locks in the order of its transfer.
func transferMany(ctx context.Context, b bank, tellers [2]*conn.Session, auditor *conn.Session, out io.Writer) error {
	fmt.Fprintln(out, "\n2. One MultiLock per teller, given the locks in the order of its transfer:")
	type plan struct {
		from, to string
		amount   int
	}
	plans := [2]plan{{"A", "B", amountAB}, {"B", "A", amountBA}}
	var (
		wg    sync.WaitGroup
		errs  [2]error
		paths [2][]string // each teller's lease nodes, in the order its MultiLock took them
	)
	begin := time.Now()
	for t := range tellers {
		p := plans[t]
		m, err := b.multi(tellers[t], p.from, p.to)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range transfers {
				if paths[t], errs[t] = transfer(ctx, tellers[t], b, m, p.from, p.to, p.amount); errs[t] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	fmt.Fprintf(out, "   both take the locks in path order: %s, %s\n", names(b, paths[0]), names(b, paths[1]))
	a, bb, err := b.balances(ctx, auditor)
	if err != nil {
		return err
	}
	wantA := opening - transfers*amountAB + transfers*amountBA
	fmt.Fprintf(out, "   %d transfers A→B of %d and %d B→A of %d in %v: no deadlock\n",
		transfers, amountAB, transfers, amountBA, time.Since(begin).Round(10*time.Millisecond))
	fmt.Fprintf(out, "   balances A=%d B=%d, total %d (want A=%d B=%d)\n", a, bb, a+bb, wantA, 2*opening-wantA)
	if a != wantA || a+bb != 2*opening {
		return fmt.Errorf("money was created or lost: A=%d B=%d", a, bb)
	}
	return nil
}

// transfer moves amount from one account to the other under m, a lock of
// session s, writing both balances in one transaction that checks both lock
// nodes. It returns the paths of the leases' nodes, in the order m took
// them.
func transfer(ctx context.Context, s *conn.Session, b bank, m *multilock.MultiLock, from, to string, amount int) (taken []string, err error) {
	leases, err := m.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, m.Release(context.WithoutCancel(ctx))) }()
	for _, l := range leases {
		taken = append(taken, l.Path())
	}
	src, err := balance(ctx, s, b.account(from))
	if err != nil {
		return taken, err
	}
	dst, err := balance(ctx, s, b.account(to))
	if err != nil {
		return taken, err
	}
	_, err = guardedWrite(ctx, leases,
		setBalance(b.account(from), src-amount),
		setBalance(b.account(to), dst+amount))
	return taken, err
}

// guardedWrite commits ops only while every lease is held: the first
// lease's guarded write, with a check that every other lease's lock node
// (a mutex lease stands on its own node, Path) still exists in front.
func guardedWrite(ctx context.Context, leases []*conn.Lease, ops ...any) ([]zk.MultiResponse, error) {
	checks := make([]any, 0, len(leases)-1+len(ops))
	for _, l := range leases[1:] {
		if err := l.Err(); err != nil {
			return nil, err
		}
		checks = append(checks, &zk.CheckVersionRequest{Path: l.Path(), Version: -1})
	}
	return leases[0].GuardedWrite(ctx, append(checks, ops...)...)
}

// allOrNothing: an auditor holds B; a MultiLock over A and B must fail by
// its deadline and give A back.
func allOrNothing(ctx context.Context, b bank, teller, auditor *conn.Session, out io.Writer) error {
	fmt.Fprintf(out, "\n3. All or nothing: an auditor holds B; teller 1 asks for A and B with a deadline of %v:\n", giveUp)
	audit, err := b.mutexes(auditor, "A", "B")
	if err != nil {
		return err
	}
	if _, err := audit[1].Acquire(ctx); err != nil {
		return err
	}
	m, err := b.multi(teller, "A", "B")
	if err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, giveUp)
	_, err = m.Acquire(wait)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("expected the MultiLock to fail by its deadline, got %v", err)
	}
	fmt.Fprintf(out, "   Acquire fails: %s\n", strings.ReplaceAll(err.Error(), b.root, ""))
	_, free, err := audit[0].TryAcquire(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   A was given back: the auditor's TryAcquire on A succeeds: %v\n", free)
	if !free {
		return errors.New("the failed MultiLock kept A")
	}
	return errors.Join(audit[0].Release(ctx), audit[1].Release(ctx))
}

// lost: the server expires teller 1's session while it holds A and B.
func lost(ctx context.Context, b bank, servers []string, tellers [2]*conn.Session, auditor *conn.Session, out io.Writer) error {
	fmt.Fprintln(out, "\n4. Lost: teller 1 holds A and B; the server expires its session:")
	m, err := b.multi(tellers[0], "A", "B")
	if err != nil {
		return err
	}
	leases, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	before, err := tokens(ctx, leases)
	if err != nil {
		return err
	}
	a0, b0, err := b.balances(ctx, auditor)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   teller 1's fencing tokens: A %v, B %v\n", before[0], before[1])
	lostCh := m.Lost()
	ep := leases[0].Epoch()
	if err := zktest.ExpireEpoch(ctx, servers[0], ep); err != nil {
		return err
	}
	select {
	case <-lostCh:
	case <-time.After(30 * time.Second):
		return errors.New("MultiLock.Lost did not close after the session expired")
	}
	var why error
	for _, l := range leases {
		if why == nil {
			why = l.Err()
		}
	}
	fmt.Fprintf(out, "   MultiLock.Lost() closes: %v\n", why)
	_, err = guardedWrite(ctx, leases, setBalance(b.account("A"), a0-50), setBalance(b.account("B"), b0+50))
	if !errors.Is(err, conn.ErrLeaseLost) {
		return fmt.Errorf("teller 1's transfer on lost locks: got %v, want conn.ErrLeaseLost", err)
	}
	fmt.Fprintln(out, "   teller 1's guarded transfer of 50 is refused (conn.ErrLeaseLost)")
	if err := m.Release(ctx); err != nil {
		return err
	}

	m2, err := b.multi(tellers[1], "B", "A")
	if err != nil {
		return err
	}
	leases2, err := m2.Acquire(ctx)
	if err != nil {
		return err
	}
	after, err := tokens(ctx, leases2)
	if err == nil {
		err = m2.Release(ctx)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   teller 2 takes A and B with higher tokens: A %v, B %v\n", after[0], after[1])
	if after[0].Compare(before[0]) <= 0 || after[1].Compare(before[1]) <= 0 {
		return fmt.Errorf("fencing tokens did not grow: %v after %v", after, before)
	}
	a1, b1, err := b.balances(ctx, auditor)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   balances unchanged: A=%d B=%d\n", a1, b1)
	if a1 != a0 || b1 != b0 {
		return fmt.Errorf("a lost lock's transfer got through: A=%d B=%d, was A=%d B=%d", a1, b1, a0, b0)
	}
	return nil
}

// tokens returns the fencing token of each lease.
func tokens(ctx context.Context, leases []*conn.Lease) ([]conn.Fence, error) {
	ts := make([]conn.Fence, len(leases))
	for i, l := range leases {
		var err error
		if ts[i], err = l.Fence(ctx); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// names turns the paths of lock nodes (a mutex's node is under its lock
// path) back into account names.
func names(b bank, paths []string) string {
	s := ""
	for i, p := range paths {
		if i > 0 {
			s += " then "
		}
		s += strings.SplitN(p[len(b.lock("")):], "/", 2)[0]
	}
	return s
}

// open creates both accounts with the opening balance.
func (b bank) open(ctx context.Context, s *conn.Session) error {
	if err := demo.CreateParents(ctx, s, b.account("A")); err != nil {
		return err
	}
	for _, n := range []string{"A", "B"} {
		if _, err := s.Create(ctx, b.account(n), []byte(strconv.Itoa(opening)), 0, zk.WorldACL(zk.PermAll)); err != nil {
			return err
		}
	}
	return nil
}

// close deletes the accounts; their parents are containers, reaped by the
// server once empty, as are the lock paths.
func (b bank) close(s *conn.Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(s.Delete(ctx, b.account("A"), -1), s.Delete(ctx, b.account("B"), -1))
}

func (b bank) balances(ctx context.Context, s *conn.Session) (a, bb int, err error) {
	if a, err = balance(ctx, s, b.account("A")); err != nil {
		return 0, 0, err
	}
	bb, err = balance(ctx, s, b.account("B"))
	return a, bb, err
}

func balance(ctx context.Context, s *conn.Session, path string) (int, error) {
	data, _, err := s.Get(ctx, path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(data))
}

func setBalance(path string, v int) *zk.SetDataRequest {
	return &zk.SetDataRequest{Path: path, Data: []byte(strconv.Itoa(v)), Version: -1}
}
