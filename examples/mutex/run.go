package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// increments is how many times each worker adds 1 to the counter.
const increments = 5

// run tells the story against servers, on stdout-like out.
func run(ctx context.Context, servers []string, out io.Writer) (err error) {
	root := fmt.Sprintf("/zkrecipes-examples/mutex-%x", time.Now().UnixNano())
	lockPath, counter, ledger := root+"/lock", root+"/counter", root+"/ledger"

	alice, err := newWorker(ctx, "alice", servers, lockPath)
	if err != nil {
		return err
	}
	defer alice.Close()
	bob, err := newWorker(ctx, "bob", servers, lockPath)
	if err != nil {
		return err
	}
	defer bob.Close()
	if err := demo.CreateNodes(ctx, bob.Sess, counter, ledger); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, demo.DeleteNodes(bob.Sess, counter, ledger)) }()

	// 1. Contention.
	fmt.Fprintf(out, "1. Contention: alice and bob each add 1 to a counter %d times, each time under the lock.\n", increments)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, w := range []*worker{alice, bob} {
		wg.Add(1)
		w.Async(func() {
			defer wg.Done()
			for range increments {
				if errs[i] = increment(ctx, w, counter); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	n, err := readInt(ctx, bob.Sess, counter)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   counter = %d (want %d)\n", n, 2*increments)
	if n != 2*increments {
		return fmt.Errorf("lost updates: counter is %d after %d locked increments", n, 2*increments)
	}

	// 2. Reentrancy; bob queues.
	fmt.Fprintln(out, "\n2. Reentrancy: alice takes the lock twice on one goroutine; bob has to wait.")
	var (
		lease, again *conn.Lease
		t1           conn.Fence
		stillHeld    bool
	)
	alice.Do(func() {
		if lease, err = alice.Lock.Acquire(ctx); err != nil {
			return
		}
		if again, err = alice.Lock.Acquire(ctx); err != nil {
			return
		}
		t1, err = lease.Fence(ctx)
	})
	if err != nil {
		return fmt.Errorf("alice: %w", err)
	}
	fmt.Fprintf(out, "   alice acquires it (fencing token %v), then again: same lease: %v\n", t1, lease == again)
	if lease != again {
		return errors.New("a re-entry returned a different lease")
	}
	alice.Do(func() {
		err = alice.Lock.Release(ctx)
		stillHeld = alice.Lock.IsOwnedByCurrentGoroutine()
	})
	if err != nil {
		return fmt.Errorf("alice: %w", err)
	}
	fmt.Fprintf(out, "   alice releases once: still holds it: %v (one release to go)\n", stillHeld)
	if !stillHeld {
		return errors.New("one release undid two acquires")
	}

	var got bool
	bob.Do(func() {
		if _, got, err = bob.Lock.TryAcquire(ctx); got {
			err = bob.Lock.Release(ctx)
		}
	})
	if err != nil {
		return fmt.Errorf("bob: %w", err)
	}
	fmt.Fprintf(out, "   bob's TryAcquire: %v\n", got)
	if got {
		return errors.New("bob got the lock alice holds")
	}
	var (
		bobLease *conn.Lease
		bobErr   error
	)
	queued := demo.WatchRequests(bob.Sess)
	bobGranted := bob.Async(func() { bobLease, bobErr = bob.Lock.Acquire(ctx) })
	if err := demo.WaitFor(ctx, 10*time.Second, func() bool { return demo.WatchRequests(bob.Sess) > queued }); err != nil {
		return fmt.Errorf("bob did not queue: %w", err)
	}
	fmt.Fprintln(out, "   bob's Acquire queues behind alice")

	stored := &fencedStore{}
	alice.Do(func() {
		_, err = lease.GuardedWrite(ctx, setData(ledger, fmt.Sprintf("alice, token %v", t1)))
	})
	if err != nil {
		return fmt.Errorf("alice: guarded write: %w", err)
	}
	if err := stored.write(t1, "alice"); err != nil {
		return fmt.Errorf("alice: %w", err)
	}
	fmt.Fprintf(out, "   alice writes the ledger (guarded write) and the store (token %v): both accepted\n", t1)

	// 3. Alice's session ends while she holds the lock.
	ep := lease.Epoch()
	fmt.Fprintln(out, "\n3. The server expires alice's session while she holds the lock.")
	if err := zktest.ExpireEpoch(ctx, servers[0], ep); err != nil {
		return err
	}
	select {
	case <-lease.Lost():
		fmt.Fprintf(out, "   alice's lease.Lost() closes: %v\n", lease.Err())
	case <-time.After(30 * time.Second):
		return errors.New("alice's lease.Lost() did not close")
	}
	alice.Do(func() {
		_, err = lease.GuardedWrite(ctx, setData(ledger, fmt.Sprintf("alice again, token %v", t1)))
	})
	if !errors.Is(err, conn.ErrLeaseLost) {
		return fmt.Errorf("alice's guarded write after her session expired: got %v, want conn.ErrLeaseLost", err)
	}
	fmt.Fprintln(out, "   alice's guarded write to the ledger is refused (conn.ErrLeaseLost)")

	select {
	case <-bobGranted:
	case <-ctx.Done():
		return ctx.Err()
	}
	if bobErr != nil {
		return fmt.Errorf("bob: %w", bobErr)
	}
	var t2 conn.Fence
	bob.Do(func() {
		if t2, err = bobLease.Fence(ctx); err != nil {
			return
		}
		_, err = bobLease.GuardedWrite(ctx, setData(ledger, fmt.Sprintf("bob, token %v", t2)))
	})
	if err != nil {
		return fmt.Errorf("bob: %w", err)
	}
	fmt.Fprintf(out, "   bob takes over with fencing token %v (> %v: %v) and writes the ledger\n", t2, t1, t2.Compare(t1) > 0)
	if t2.Compare(t1) <= 0 {
		return fmt.Errorf("the fencing token did not grow: %v after %v", t2, t1)
	}
	if err := stored.write(t2, "bob"); err != nil {
		return fmt.Errorf("bob: %w", err)
	}
	fmt.Fprintf(out, "   bob writes the store with token %v: accepted\n", t2)
	// Alice, unaware (a GC pause, a slow request), writes with her token.
	if err := stored.write(t1, "alice, late"); err == nil {
		return errors.New("the store took alice's late write")
	} else {
		fmt.Fprintf(out, "   alice's late write to the store with token %v: %v\n", t1, err)
	}

	alice.Do(func() { err = alice.Lock.Release(ctx) })
	if err != nil {
		return fmt.Errorf("alice: release of the lost lock: %w", err)
	}
	fmt.Fprintln(out, "   alice releases her lost lock: no error, nothing to delete")
	bob.Do(func() { err = bob.Lock.Release(ctx) })
	if err != nil {
		return fmt.Errorf("bob: %w", err)
	}

	final, err := demo.Read(ctx, bob.Sess, ledger)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nledger: %q; store: %q\n", final, stored.value)
	if want := fmt.Sprintf("bob, token %v", t2); final != want {
		return fmt.Errorf("ledger says %q, want %q", final, want)
	}
	return nil
}

// increment adds 1 to the counter under w's lock: read, add, and write
// back through the lease, so that the write commits only while w holds
// the lock.
func increment(ctx context.Context, w *worker, counter string) (err error) {
	lease, err := w.Lock.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", w.Name, err)
	}
	defer func() {
		if rerr := w.Lock.Release(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", w.Name, rerr))
		}
	}()
	n, err := readInt(ctx, w.Sess, counter)
	if err != nil {
		return err
	}
	time.Sleep(time.Millisecond) // widen the window the lock must guard
	if _, err := lease.GuardedWrite(ctx, setData(counter, strconv.Itoa(n+1))); err != nil {
		return fmt.Errorf("%s: %w", w.Name, err)
	}
	return nil
}

// fencedStore stands for any system outside ZooKeeper (a database, a file
// service) that checks fencing tokens: it refuses a write with a lower
// token than one it has already accepted. A check on the write alone is
// enough here because each write replaces the value without reading it; a
// holder that reads what it writes from must register its token first
// (docs/safety.md, "A pause after the check").
type fencedStore struct {
	mu      sync.Mutex // guards the fields below
	highest conn.Fence
	value   string
}

func (s *fencedStore) write(token conn.Fence, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token.Compare(s.highest) < 0 {
		return fmt.Errorf("refused: token %v is older than %v", token, s.highest)
	}
	s.highest, s.value = token, v
	return nil
}

func setData(path, data string) *zk.SetDataRequest {
	return &zk.SetDataRequest{Path: path, Data: []byte(data), Version: -1}
}
