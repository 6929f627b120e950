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
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const (
	workers        = 5
	leases         = 2
	jobs           = 3                     // per worker
	jobTime        = 30 * time.Millisecond // a job holds its lease this long
	sessionTimeout = 4 * time.Second
)

// worker is one process: its session and its handle on the semaphore. The
// semaphore's handle owns the leases; any goroutine may release them.
type worker struct {
	name string
	sess *conn.Session
	sem  *semaphoremutex.Semaphore
}

func run(ctx context.Context, servers []string, out io.Writer) (err error) {
	root := fmt.Sprintf("/zkrecipes-examples/semaphore-%x", time.Now().UnixNano())
	semPath, records := root+"/licences", root+"/records"
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = &worker{name: "w" + strconv.Itoa(i+1)}
		if ws[i].sess, err = conn.Connect(ctx, servers, conn.WithSessionTimeout(sessionTimeout)); err != nil {
			return err
		}
		defer ws[i].sess.Close()
		if ws[i].sem, err = semaphoremutex.NewSemaphore(ws[i].sess, semPath, leases); err != nil {
			return err
		}
	}
	admin := ws[workers-1].sess
	if err := createDir(ctx, admin, records); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, deleteDir(admin, records)) }()
	fmt.Fprintf(out, "%d workers, each on its own session, share a semaphore of %d leases.\n", workers, leases)

	if err := share(ctx, ws, records, out); err != nil {
		return err
	}
	return lose(ctx, servers, ws, records, out)
}

// share has every worker run its jobs at once, each under a lease.
func share(ctx context.Context, ws []*worker, records string, out io.Writer) error {
	fmt.Fprintf(out, "\n1. Each worker runs %d jobs of %v, each under a lease:\n", jobs, jobTime)
	var (
		inside, most atomic.Int32
		mu           sync.Mutex // guards tokens
		tokens       = map[string][]conn.Fence{}
		wg           sync.WaitGroup
		errs         = make([]error, len(ws))
	)
	begin := time.Now()
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 1; j <= jobs; j++ {
				token, err := job(ctx, w, j, records, func() {
					n := inside.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(jobTime) // the job's work
					inside.Add(-1)
				})
				if err != nil {
					errs[i] = err
					return
				}
				mu.Lock()
				tokens[w.name] = append(tokens[w.name], token)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	took := time.Since(begin)
	n, err := count(ctx, ws[0].sess, records)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   %d jobs done in %v; workers inside at once: at most %d (the semaphore allows %d)\n",
		workers*jobs, took.Round(10*time.Millisecond), most.Load(), leases)
	if most.Load() > leases {
		return fmt.Errorf("%d workers were inside at once, with %d leases", most.Load(), leases)
	}
	distinct := map[conn.Fence]bool{}
	for _, w := range ws {
		ts := tokens[w.name]
		parts := make([]string, len(ts))
		for k, t := range ts {
			parts[k] = t.String()
			distinct[t] = true
		}
		fmt.Fprintf(out, "   %s's leases had fencing tokens %s\n", w.name, strings.Join(parts, ", "))
	}
	if len(distinct) != workers*jobs {
		return fmt.Errorf("%d distinct tokens for %d leases", len(distinct), workers*jobs)
	}
	fmt.Fprintf(out, "   %d leases, %d distinct tokens; %d results recorded through their leases\n", workers*jobs, len(distinct), n)
	if n != workers*jobs {
		return fmt.Errorf("%d results recorded, want %d", n, workers*jobs)
	}
	return nil
}

// job takes a lease, runs work and records the result through the lease.
// It returns the lease's token.
func job(ctx context.Context, w *worker, j int, records string, work func()) (token conn.Fence, err error) {
	lease, err := w.sem.Acquire(ctx)
	if err != nil {
		return conn.Fence{}, fmt.Errorf("%s: %w", w.name, err)
	}
	defer func() { err = errors.Join(err, w.sem.ReturnLease(context.WithoutCancel(ctx), lease)) }()
	if token, err = lease.Fence(ctx); err != nil {
		return conn.Fence{}, err
	}
	work()
	_, err = lease.GuardedWrite(ctx, record(records, w.name, j, token))
	return token, err
}

// record is the node that records job j of worker name.
func record(records, name string, j int, token conn.Fence) *zk.CreateRequest {
	return &zk.CreateRequest{
		Path: fmt.Sprintf("%s/%s-job%d", records, name, j),
		Data: []byte(fmt.Sprintf("token %v", token)),
		Acl:  zk.WorldACL(zk.PermAll),
	}
}

// lose: w1 and w2 hold the leases, w3 waits; w1's session is expired.
func lose(ctx context.Context, servers []string, ws []*worker, records string, out io.Writer) error {
	fmt.Fprintln(out, "\n2. Lost lease: w1 and w2 hold the two leases, w3 waits; the server expires w1's session:")
	w1, w2, w3 := ws[0], ws[1], ws[2]
	l1, err := w1.sem.Acquire(ctx)
	if err != nil {
		return err
	}
	l2, err := w2.sem.Acquire(ctx)
	if err != nil {
		return err
	}
	t1, err := l1.Fence(ctx)
	if err != nil {
		return err
	}
	var (
		l3    *conn.Lease
		l3Err error
	)
	queued := demo.WatchRequests(w3.sess)
	granted := make(chan struct{})
	go func() {
		defer close(granted)
		l3, l3Err = w3.sem.Acquire(ctx)
	}()
	if err := demo.WaitFor(ctx, 10*time.Second, func() bool { return demo.WatchRequests(w3.sess) > queued }); err != nil {
		return fmt.Errorf("w3 did not queue: %w", err)
	}

	lost := l1.Lost()
	ep := l1.Epoch()
	if err := zktest.ExpireEpoch(ctx, servers[0], ep); err != nil {
		return err
	}
	select {
	case <-lost:
		fmt.Fprintf(out, "   w1's lease.Lost() closes: %v\n", l1.Err())
	case <-time.After(30 * time.Second):
		return errors.New("w1's lease.Lost() did not close")
	}
	_, err = l1.GuardedWrite(ctx, record(records, w1.name, jobs+1, t1))
	if !errors.Is(err, conn.ErrLeaseLost) {
		return fmt.Errorf("w1's guarded write on a lost lease: got %v, want conn.ErrLeaseLost", err)
	}
	fmt.Fprintln(out, "   w1's guarded write is refused (conn.ErrLeaseLost)")
	if err := w1.sem.ReturnLease(ctx, l1); err != nil {
		return fmt.Errorf("w1: release of the lost lease: %w", err)
	}

	select {
	case <-granted:
	case <-ctx.Done():
		return ctx.Err()
	}
	if l3Err != nil {
		return fmt.Errorf("w3: %w", l3Err)
	}
	t3, err := l3.Fence(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   w3 gets the freed lease with token %v (> w1's %v); w2 still holds its own: %v\n", t3, t1, l2.Err() == nil)
	switch {
	case t3.Compare(t1) <= 0:
		return fmt.Errorf("w3's token %v is not above w1's %v", t3, t1)
	case l2.Err() != nil:
		return fmt.Errorf("w2 lost its lease: %w", l2.Err())
	}
	if _, err := l3.GuardedWrite(ctx, record(records, w3.name, jobs+1, t3)); err != nil {
		return fmt.Errorf("w3: %w", err)
	}
	if err := errors.Join(w2.sem.ReturnLease(ctx, l2), w3.sem.ReturnLease(ctx, l3)); err != nil {
		return err
	}
	names, err := children(ctx, w2.sess, records)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   records now: %d (w3's recorded, w1's refused)\n", len(names))
	if slices.Contains(names, fmt.Sprintf("%s-job%d", w1.name, jobs+1)) {
		return errors.New("w1's write on its lost lease got through")
	}
	return nil
}

// createDir creates the node at path (and its parents, as containers).
func createDir(ctx context.Context, s *conn.Session, path string) error {
	if err := demo.CreateParents(ctx, s, path); err != nil {
		return err
	}
	_, err := s.Create(ctx, path, nil, 0, zk.WorldACL(zk.PermAll))
	return err
}

// deleteDir deletes the node at path and its children.
func deleteDir(s *conn.Session, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	names, err := children(ctx, s, path)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := s.Delete(ctx, path+"/"+n, -1); err != nil {
			return err
		}
	}
	return s.Delete(ctx, path, -1)
}

func children(ctx context.Context, s *conn.Session, path string) ([]string, error) {
	names, _, err := s.Children(ctx, path)
	return names, err
}

func count(ctx context.Context, s *conn.Session, path string) (int, error) {
	names, err := children(ctx, s, path)
	return len(names), err
}
