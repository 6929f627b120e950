package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// run tells the story against servers.
func run(ctx context.Context, servers []string, out io.Writer) (err error) {
	root := fmt.Sprintf("/zkrecipes-examples/rwlock-%x", time.Now().UnixNano())
	lockPath, catalog := root+"/lock", root+"/catalog"
	ws := map[string]*worker{}
	for _, name := range []string{"r1", "r2", "r3", "w"} {
		w, err := newWorker(ctx, name, servers, lockPath)
		if err != nil {
			return err
		}
		defer w.Close()
		ws[name] = w
	}
	r1, r2, r3, w := ws["r1"], ws["r2"], ws["r3"], ws["w"]
	if err := demo.CreateNodes(ctx, r1.Sess, catalog); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, demo.DeleteNodes(r1.Sess, catalog)) }()
	fmt.Fprintln(out, "A catalog node, read under the read lock and written under the write lock;")
	fmt.Fprintln(out, "readers r1, r2, r3 and writer w each on their own session.")

	// 1. Readers share.
	fmt.Fprintln(out, "\n1. Readers share:")
	t1, err := readLock(ctx, r1)
	if err != nil {
		return err
	}
	t2, err := readLock(ctx, r2)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   r1 and r2 hold the read lock at once (tokens %v, %v)\n", t1, t2)

	// 2. A writer waits; a reader behind it waits too.
	fmt.Fprintln(out, "\n2. A writer waits:")
	var (
		wLease *conn.Lease
		wErr   error
	)
	queued := demo.WatchRequests(w.Sess)
	wGranted := w.Async(func() { wLease, wErr = w.Lock.WriteLock().Acquire(ctx) })
	if err := demo.WaitFor(ctx, 10*time.Second, func() bool { return demo.WatchRequests(w.Sess) > queued }); err != nil {
		return fmt.Errorf("w did not queue: %w", err)
	}
	fmt.Fprintln(out, "   w's Acquire of the write lock queues behind the two readers")
	var got bool
	r3.Do(func() {
		if _, got, err = r3.Lock.ReadLock().TryAcquire(ctx); got {
			err = errors.Join(err, r3.Lock.ReadLock().Release(ctx))
		}
	})
	if err != nil {
		return fmt.Errorf("r3: %w", err)
	}
	fmt.Fprintf(out, "   r3's TryAcquire of the read lock: %v (w queued first; writers do not starve)\n", got)
	if got {
		return errors.New("r3 overtook the writer queued before it")
	}
	var r3Err error
	queued = demo.WatchRequests(r3.Sess)
	r3Granted := r3.Async(func() { _, r3Err = r3.Lock.ReadLock().Acquire(ctx) })
	if err := demo.WaitFor(ctx, 10*time.Second, func() bool { return demo.WatchRequests(r3.Sess) > queued }); err != nil {
		return fmt.Errorf("r3 did not queue: %w", err)
	}
	fmt.Fprintln(out, "   r3's Acquire queues behind w")
	if granted(wGranted) {
		return errors.New("w got the write lock while readers held it")
	}
	if err := errors.Join(readUnlock(ctx, r1), readUnlock(ctx, r2)); err != nil {
		return err
	}
	<-wGranted
	if wErr != nil {
		return fmt.Errorf("w: %w", wErr)
	}
	var tw conn.Fence
	entry := ""
	w.Do(func() {
		if tw, err = wLease.Fence(ctx); err != nil {
			return
		}
		entry = fmt.Sprintf("price 12, by w (token %v)", tw)
		_, err = wLease.GuardedWrite(ctx, &zk.SetDataRequest{Path: catalog, Data: []byte(entry), Version: -1})
	})
	if err != nil {
		return fmt.Errorf("w: %w", err)
	}
	fmt.Fprintf(out, "   r1 and r2 release; w gets the write lock (token %v) and writes %q\n", tw, entry)
	if tw.Compare(t1) <= 0 || tw.Compare(t2) <= 0 {
		return fmt.Errorf("the writer's token %v is not above the readers' %v, %v", tw, t1, t2)
	}
	if granted(r3Granted) {
		return errors.New("r3 got the read lock while w held the write lock")
	}

	// 3. Downgrade.
	fmt.Fprintln(out, "\n3. Downgrade:")
	w.Do(func() { _, err = w.Lock.ReadLock().Acquire(ctx) })
	if err != nil {
		return fmt.Errorf("w: downgrade: %w", err)
	}
	fmt.Fprintln(out, "   w takes the read lock while it holds the write lock: granted at once")
	w.Do(func() { err = w.Lock.WriteLock().Release(ctx) })
	if err != nil {
		return fmt.Errorf("w: %w", err)
	}
	<-r3Granted
	if r3Err != nil {
		return fmt.Errorf("r3: %w", r3Err)
	}
	var seenW, seenR3 string
	w.Do(func() { seenW, err = demo.Read(ctx, w.Sess, catalog) })
	if err == nil {
		r3.Do(func() { seenR3, err = demo.Read(ctx, r3.Sess, catalog) })
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   w lets go of the write lock: r3 gets in beside w; both read %q\n", seenR3)
	if seenW != entry || seenR3 != entry {
		return fmt.Errorf("after the downgrade w reads %q and r3 %q, want %q", seenW, seenR3, entry)
	}
	if err := errors.Join(readUnlock(ctx, w), readUnlock(ctx, r3)); err != nil {
		return err
	}

	// 4. The writer's session ends while it holds the lock.
	fmt.Fprintln(out, "\n4. Lost lock:")
	w.Do(func() { wLease, err = w.Lock.WriteLock().Acquire(ctx) })
	if err != nil {
		return fmt.Errorf("w: %w", err)
	}
	tw2, err := wLease.Fence(ctx)
	if err != nil {
		return err
	}
	lost := wLease.Lost()
	ep := wLease.Epoch()
	fmt.Fprintf(out, "   w takes the write lock again (token %v); the server expires w's session\n", tw2)
	if err := zktest.ExpireEpoch(ctx, servers[0], ep); err != nil {
		return err
	}
	select {
	case <-lost:
		fmt.Fprintf(out, "   w's lease.Lost() closes: %v\n", wLease.Err())
	case <-time.After(30 * time.Second):
		return errors.New("w's lease.Lost() did not close")
	}
	w.Do(func() {
		_, err = wLease.GuardedWrite(ctx, &zk.SetDataRequest{Path: catalog, Data: []byte("price 99, by w"), Version: -1})
	})
	if !errors.Is(err, conn.ErrLeaseLost) {
		return fmt.Errorf("w's guarded write on a lost lock: got %v, want conn.ErrLeaseLost", err)
	}
	fmt.Fprintln(out, "   w's guarded write is refused (conn.ErrLeaseLost)")
	w.Do(func() { err = w.Lock.WriteLock().Release(ctx) })
	if err != nil {
		return fmt.Errorf("w: release of the lost lock: %w", err)
	}

	t3, err := readLock(ctx, r1)
	if err != nil {
		return err
	}
	var seen string
	r1.Do(func() { seen, err = demo.Read(ctx, r1.Sess, catalog) })
	if err == nil {
		err = readUnlock(ctx, r1)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   r1 reads under the read lock (token %v > %v): %q, unchanged\n", t3, tw2, seen)
	switch {
	case t3.Compare(tw2) <= 0:
		return fmt.Errorf("r1's token %v is not above w's %v", t3, tw2)
	case seen != entry:
		return fmt.Errorf("the catalog says %q, want %q", seen, entry)
	}
	return nil
}

// readLock takes w's read lock on w's goroutine and returns the lease's
// fencing token.
func readLock(ctx context.Context, w *worker) (token conn.Fence, err error) {
	w.Do(func() {
		var l *conn.Lease
		if l, err = w.Lock.ReadLock().Acquire(ctx); err == nil {
			token, err = l.Fence(ctx)
		}
	})
	if err != nil {
		return conn.Fence{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	return token, nil
}

// readUnlock releases w's read lock on w's goroutine.
func readUnlock(ctx context.Context, w *worker) (err error) {
	w.Do(func() { err = w.Lock.ReadLock().Release(ctx) })
	if err != nil {
		return fmt.Errorf("%s: %w", w.Name, err)
	}
	return nil
}

// granted reports whether done is closed.
func granted(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
